/** The scenarios of `npm run bench:insights`, in the order they run. */
import type { Scenario } from './scenario.ts';
import { funnelScenario } from './scenario-funnels.ts';
import { retentionScenario } from './scenario-retention.ts';
import { trendScenario } from './scenario-trends.ts';

export const SCENARIOS: readonly Scenario[] = [trendScenario, funnelScenario, retentionScenario];
