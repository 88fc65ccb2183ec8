// Types of launch-settings.js, for the TypeScript that reads it (benches, tests).
export declare const LAUNCH_ENV: Readonly<Record<string, string>>;
export declare const LAUNCH_NODE_ARGS: readonly string[];
export declare const LAUNCH_SETTINGS_VARIABLE: string;
export declare const RELAUNCHED_VARIABLE: string;
export declare function launchSettingsWanted(env: Readonly<Record<string, string | undefined>>): boolean;
export declare function missingLaunchSettings(
  env: Readonly<Record<string, string | undefined>>,
  execArgv: readonly string[],
): { env: Record<string, string>; nodeArgs: string[] };
