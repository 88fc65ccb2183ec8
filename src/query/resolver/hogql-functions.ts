/**
 * HogQL's function names, with HogQL's meaning. The checklist is PostHog's published mapping of HogQL names to
 * ClickHouse (posthog/hogql/functions/mapping.py and what it gathers: clickhouse/{arithmetic,arrays,conversions,
 * datetime,geo,json,mathematical,strings}.py, aggregations.py, posthog.py, udfs.py, sparkline.py), read in
 * June 2026. Each name there is one of:
 * - the ClickHouse function of the same name (HOGQL_SAME_NAME): allowed when functions.ts allows it, whose
 *   safety rules are unchanged;
 * - another ClickHouse function, or a form of calls (HOGQL_REWRITES, HOGQL_TEXT_OVERLOADS): the resolver
 *   writes the call HogQL would print, then checks that call against functions.ts like any other;
 * - refused by name (HOGQL_REFUSED), with the reason.
 * test/unit/hogql-functions.test.ts holds every allowed name against chDB's `system.functions`.
 */
import { languages } from 'countries-list';
import { parseDialect, type Call, type Expr, type Span } from '../dialect/mod.ts';
import { LOOKUP_FUNCTION_NAMES, lookupLambdaText } from './channel-type.ts';
import { QueryResolveError, shown } from './errors.ts';
import { functionKind } from './functions.ts';

const words = (text: string): string[] => text.split(/\s+/).filter(Boolean);

/** HogQL names that are the ClickHouse function of the same name. */
export const HOGQL_SAME_NAME: readonly string[] = words(`
  plus minus multiply divide intDiv intDivOrZero modulo moduloOrZero positiveModulo negate abs gcd lcm max2 min2
  multiplyDecimal divideDecimal
  empty notEmpty length reverse array range arrayConcat arrayElement has hasAll hasAny hasSubstr indexOf arrayCount
  countEqual arrayEnumerate arrayEnumerateUniq arrayPopBack arrayPopFront arrayPushBack arrayPushFront arrayResize
  arraySlice arraySort arrayReverseSort arrayUniq arrayJoin arrayDifference arrayDistinct arrayEnumerateDense
  arrayIntersect arrayReduce arrayReverse arrayFilter arrayFlatten arrayCompact arrayZip arrayAUC arrayMap
  arrayFill arrayFold arrayWithConstant arraySplit arrayReverseFill arrayReverseSplit arrayRotateLeft
  arrayRotateRight arrayExists arrayAll arrayFirst arrayLast arrayFirstIndex arrayLastIndex arrayMin arrayMax
  arraySum arrayAvg arrayCumSum arrayCumSumNonNegative arrayProduct arrayStringConcat
  hex unhex reinterpretAsUInt8 reinterpretAsUInt16 reinterpretAsUInt32 reinterpretAsUInt64 reinterpretAsUInt128
  reinterpretAsUInt256 reinterpretAsInt8 reinterpretAsInt16 reinterpretAsInt32 reinterpretAsInt64
  reinterpretAsInt128 reinterpretAsInt256 reinterpretAsFloat32 reinterpretAsFloat64 reinterpretAsUUID
  toUUIDOrDefault toString toBool toJSONString toTypeName cityHash64 UUIDv7ToDateTime toDateTime64
  isNull isNotNull coalesce ifNull nullIf assumeNotNull toNullable
  timeZoneOf timeZoneOffset toYear toQuarter toMonth toDayOfYear toDayOfMonth toDayOfWeek toHour toMinute toSecond
  toUnixTimestamp toUnixTimestamp64Milli fromUnixTimestamp64Milli toStartOfInterval toStartOfYear toStartOfISOYear
  toStartOfQuarter toStartOfMonth toLastDayOfMonth toMonday toStartOfWeek toStartOfDay toLastDayOfWeek
  toStartOfHour toStartOfMinute toStartOfSecond toStartOfFiveMinutes toStartOfTenMinutes toStartOfFifteenMinutes
  toTime toISOYear toISOWeek toWeek toYearWeek age dateAdd dateSub date_add dateDiff dateTrunc date_trunc
  timeStampAdd timeStampSub nowInBlock rowNumberInBlock rowNumberInAllBlocks timeSlot toYYYYMM toYYYYMMDD
  toYYYYMMDDhhmmss addYears addMonths addWeeks addDays addHours addMinutes addSeconds addQuarters subtractYears
  subtractMonths subtractWeeks subtractDays subtractHours subtractMinutes subtractSeconds subtractQuarters
  timeSlots formatDateTime dateName monthName fromUnixTimestamp yesterday today toIntervalSecond
  toIntervalMinute toIntervalHour toIntervalDay toIntervalWeek toIntervalMonth toIntervalQuarter toIntervalYear
  toTimeZone now
  greatCircleDistance geoDistance greatCircleAngle pointInEllipses pointInPolygon geohashEncode geohashDecode
  geohashesInBox
  isValidJSON JSONHas JSONLength JSONArrayLength JSONType JSONExtract JSONExtractUInt JSONExtractInt
  JSONExtractFloat JSONExtractBool JSONExtractString JSONExtractKeys JSONExtractRaw
  JSONExtractArrayRaw JSONExtractKeysAndValues JSONExtractKeysAndValuesRaw JSON_VALUE
  e pi exp log ln exp2 log2 exp10 log10 sqrt cbrt erf erfc lgamma tgamma sin cos tan asin acos atan pow power
  intExp2 intExp10 cosh acosh sinh asinh atanh atan2 hypot log1p sign degrees radians factorial width_bucket
  floor ceil trunc round roundBankers roundToExp2 roundDuration roundAge roundDown rand
  lengthUTF8 leftPad rightPad leftPadUTF8 rightPadUTF8 lower upper lowerUTF8 upperUTF8 isValidUTF8 toValidUTF8
  format reverseUTF8 concat substring substringUTF8 appendTrailingCharIfAbsent base58Encode base58Decode
  tryBase58Decode base64Encode base64Decode tryBase64Decode endsWith startsWith encodeXMLComponent
  decodeXMLComponent extractTextFromHTML ascii concatWithSeparator trimLeft trimRight trim convertCharset
  position positionCaseInsensitive positionUTF8 positionCaseInsensitiveUTF8 multiSearchAllPositions
  multiSearchAllPositionsUTF8 multiSearchFirstPosition multiSearchFirstIndex multiSearchAny
  multiSearchAllPositionsCaseInsensitive multiSearchAllPositionsCaseInsensitiveUTF8 multiSearchAnyUTF8
  multiSearchAnyCaseInsensitive multiSearchAnyCaseInsensitiveUTF8 multiSearchFirstIndexUTF8
  multiSearchFirstIndexCaseInsensitive multiSearchFirstIndexCaseInsensitiveUTF8 multiSearchFirstPositionUTF8
  multiSearchFirstPositionCaseInsensitive multiSearchFirstPositionCaseInsensitiveUTF8 match multiMatchAny
  multiMatchAnyIndex multiMatchAllIndices multiFuzzyMatchAny multiFuzzyMatchAnyIndex multiFuzzyMatchAllIndices
  extract extractAll extractAllGroupsHorizontal extractAllGroupsVertical extractGroups like ilike notLike notILike
  locate ngramDistance ngramDistanceCaseInsensitive ngramDistanceUTF8 ngramDistanceCaseInsensitiveUTF8
  ngramSearch ngramSearchCaseInsensitive ngramSearchUTF8 ngramSearchCaseInsensitiveUTF8 countSubstrings
  countSubstringsCaseInsensitive countSubstringsCaseInsensitiveUTF8 countMatches countMatchesCaseInsensitive
  hasSubsequence hasSubsequenceCaseInsensitive hasSubsequenceUTF8 hasSubsequenceCaseInsensitiveUTF8 hasToken
  hasTokenCaseInsensitive hasTokenOrNull hasTokenCaseInsensitiveOrNull hasAllTokens hasAnyTokens regexpExtract
  replace replaceAll replaceOne replaceRegexpAll replaceRegexpOne regexpQuoteMeta translate translateUTF8
  splitByChar splitByString splitByRegexp splitByWhitespace splitByNonAlpha alphaTokens extractAllGroups ngrams
  tokens repeat initcap lpad rpad
  equals notEquals less greater lessOrEquals greaterOrEquals in notIn and or xor not if multiIf
  map mapFromArrays mapAdd mapSubtract mapPopulateSeries mapContains mapKeys mapValues mapContainsKeyLike
  mapExtractKeyLike mapApply mapFilter mapUpdate
  bitAnd bitOr bitXor bitNot bitShiftLeft bitShiftRight bitRotateLeft bitRotateRight bitSlice bitTest bitTestAll
  bitTestAny bitCount bitHammingDistance
  bitmapBuild bitmapToArray bitmapSubsetInRange bitmapSubsetLimit subBitmap bitmapContains bitmapHasAny
  bitmapHasAll bitmapCardinality bitmapMin bitmapMax bitmapTransform bitmapAnd bitmapOr bitmapXor bitmapAndnot
  bitmapAndCardinality bitmapOrCardinality bitmapXorCardinality bitmapAndnotCardinality
  protocol domain domainWithoutWWW topLevelDomain firstSignificantSubdomain cutToFirstSignificantSubdomain
  cutToFirstSignificantSubdomainWithWWW port path pathFull queryString fragment queryStringAndFragment
  extractURLParameter extractURLParameters extractURLParameterNames URLHierarchy URLPathHierarchy
  encodeURLComponent decodeURLComponent encodeURLFormComponent decodeURLFormComponent netloc cutWWW
  cutQueryString cutFragment cutQueryStringAndFragment cutURLParameter
  tuple tupleElement untuple tupleHammingDistance tupleToNameValuePairs tuplePlus tupleMinus tupleMultiply
  tupleDivide tupleNegate tupleMultiplyByNumber tupleDivideByNumber dotProduct
  isFinite isInfinite ifNotFinite isNaN bar transform formatReadableDecimalSize formatReadableSize
  formatReadableQuantity formatReadableTimeDelta least greatest indexHint tumble hop tumbleStart tumbleEnd hopStart hopEnd
  L1Norm L2Norm LinfNorm LpNorm L1Distance L2Distance LinfDistance LpDistance L1Normalize L2Normalize
  LinfNormalize LpNormalize cosineDistance
  rank dense_rank row_number first_value last_value nth_value lagInFrame leadInFrame
  count countIf countState countMerge countStateIf countDistinct countDistinctIf countMapIf min minIf max maxIf
  sum sumForEach minForEach sumIf avg avgIf avgMap avgMapIf avgMapState avgMapMerge avgMapMergeIf any anyIf
  stddevPop stddevPopIf stddevSamp stddevSampIf varPop varPopIf varSamp varSampIf covarPop covarPopIf covarSamp
  covarSampIf corr groupArray anyHeavy anyHeavyIf anyLast anyLastIf argMin argMinIf argMax argMaxIf argMinMerge
  argMaxMerge argMinState argMaxState sumForEachState sumForEachMerge avgState avgStateIf avgMerge avgMergeIf
  avgWeighted avgWeightedIf topK groupArrayIf groupUniqArray groupUniqArrayIf groupUniqArrayArray
  groupUniqArrayArrayIf groupArrayInsertAt groupArrayInsertAtIf groupArrayMovingAvg groupArrayMovingAvgIf
  groupArrayMovingSum groupArrayMovingSumIf groupArraySample groupArraySampleIf groupBitAnd groupBitAndIf
  groupBitOr groupBitOrIf groupBitXor groupBitXorIf groupBitmap groupBitmapIf groupBitmapState groupBitmapAnd
  groupBitmapAndIf groupBitmapAndState groupBitmapOr groupBitmapOrIf groupBitmapOrState groupBitmapXor
  groupBitmapXorIf sumWithOverflow sumWithOverflowIf deltaSum deltaSumIf deltaSumTimestamp deltaSumTimestampIf
  sumMap sumMapIf sumMapMerge sumMapMergeIf minMap minMapIf maxMap maxMapIf sumMerge sumMergeIf sumState
  sumStateIf skewSamp skewSampIf skewPop skewPopIf kurtSamp kurtSampIf kurtPop kurtPopIf uniq uniqIf uniqExact
  uniqExactState uniqExactMerge uniqExactIf uniqHLL12 uniqHLL12If uniqMerge uniqMergeIf
  uniqMap uniqMapMerge uniqMapMergeIf uniqState uniqStateIf uniqUpToMerge median medianIf medianExact
  medianExactIf medianExactLow medianExactLowIf medianExactHigh medianExactHighIf medianExactWeighted
  medianExactWeightedIf medianTiming medianTimingIf medianTimingWeighted medianTimingWeightedIf
  medianDeterministic medianDeterministicIf medianTDigest medianTDigestIf medianTDigestWeighted
  medianTDigestWeightedIf medianBFloat16 medianBFloat16If quantile quantileIf quantiles quantilesIf
  quantilesState quantilesStateIf quantilesMerge quantilesMergeIf quantileExact simpleLinearRegression
  simpleLinearRegressionIf contingency contingencyIf cramersV cramersVIf cramersVBiasCorrected
  cramersVBiasCorrectedIf theilsU theilsUIf maxIntersections maxIntersectionsIf maxIntersectionsPosition
  maxIntersectionsPositionIf windowFunnel
`);

const PARSES_AS = (name: string): string => `${name} is not available`;
const POSTHOG_ONLY =
  'it is one of PostHog’s own functions, which reads PostHog’s data or services Weir does not have';
const UDF = 'it is a user-defined function of PostHog’s ClickHouse servers, not a ClickHouse function';

/** HogQL names Weir refuses, lower-cased, with the reason. */
export const HOGQL_REFUSED: Readonly<Record<string, string>> = {
  ...Object.fromEntries(
    words(`
      matchesAction embedText convertCurrency getSurveyResponse
      uniqueSurveySubmissionsFilter getTrafficType getTrafficCategory isLikelyBot getBotType getBotName
      getBotOperator __preview_getTrafficType __preview_getTrafficCategory __preview_isBot __preview_getBotType
      __preview_getBotName __preview_getBotOperator
    `).map((n) => [n.toLowerCase(), POSTHOG_ONLY]),
  ),
  ...Object.fromEntries(
    words(`
      aggregate_funnel aggregate_funnel_array aggregate_funnel_cohort aggregate_funnel_trends
      aggregate_funnel_array_trends aggregate_funnel_cohort_trends aggregate_funnel_json aggregate_funnel_array_json
      aggregate_funnel_cohort_json aggregate_funnel_trends_json aggregate_funnel_array_trends_json
      aggregate_funnel_cohort_trends_json aggregate_funnel_test aggregate_funnel_array_trends_test
    `).map((n) => [n.toLowerCase(), UDF]),
  ),
  generateseries: 'it is a table function; for a series of numbers, SELECT number FROM numbers(n)',
  percentile_cont: 'WITHIN GROUP is not supported; use quantile(p)(x)',
  percentile_disc: 'WITHIN GROUP is not supported; use quantileExact(p)(x)',
  uniqtheta: `${PARSES_AS('uniqTheta')} in Weir’s ClickHouse (built without DataSketches); use uniq`,
  uniqthetaif: `${PARSES_AS('uniqThetaIf')} in Weir’s ClickHouse (built without DataSketches); use uniqIf`,
  jsonextractkey: 'ClickHouse has no such function; use JSONExtractKeys',
  extractipv4substrings: 'ClickHouse has no such function',
};

/** HogQL names for another ClickHouse function taking the same arguments. */
const RENAMES: Readonly<Record<string, string>> = {
  toIntOrZero: 'toInt64OrZero',
  toFloatOrZero: 'toFloat64OrZero',
  parseDateTime: 'parseDateTimeOrNull',
  toModifiedJulianDay: 'toModifiedJulianDayOrNull',
  fromModifiedJulianDay: 'fromModifiedJulianDayOrNull',
  left: 'leftUTF8',
  right: 'rightUTF8',
  ltrim: 'trimLeft',
  rtrim: 'trimRight',
  btrim: 'trimBoth',
  isEmpty: 'empty',
  isNotEmpty: 'notEmpty',
  avgArray: 'avgArrayOrNull',
  medianArray: 'medianArrayOrNull',
  array_agg: 'groupArray',
  date_diff: 'dateDiff',
  date_subtract: 'date_sub',
  to_char: 'formatDateTime',
  make_timestamp: 'makeDateTime',
  make_date: 'makeDate',
  current_timestamp: 'now64',
  current_date: 'today',
  to_date: 'toDate',
  toDateTimeUS: 'parseDateTime64BestEffortUSOrNull',
};

/** HogQL names for another ClickHouse function, with one argument only (a second one means another thing there). */
const ONE_ARGUMENT_RENAMES: Readonly<Record<string, string>> = {
  parseDateTimeBestEffort: 'parseDateTime64BestEffortOrNull',
};

/** HogQL's conversions that are `accurateCastOrNull` to a type: NULL when the value does not convert. */
const CASTS: Readonly<Record<string, string>> = {
  toInt: 'Int64',
  toFloat: 'Float64',
  toUUID: 'UUID',
  toNullableString: 'Nullable(String)',
};

type Form = (args: readonly Expr[], e: Call) => Expr;

const str = (value: string): Expr => ({ kind: 'string', value });
const fn = (name: string, args: readonly Expr[], pos?: Span): Expr => ({
  kind: 'call',
  name,
  params: null,
  args: [...args],
  distinct: false,
  over: null,
  pos,
});

/** A version `X.Y.Z` (HogQL's `sortableSemver`): no leading zeros, an optional `v`, pre-release or build after. */
const SEMVER = '^\\s*v?((0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*))(?:[-+][^\\s]*)?\\s*$';

const DATE_PARTS: Readonly<Record<string, string>> = {
  year: 'toYear',
  month: 'toMonth',
  day: 'toDayOfMonth',
  hour: 'toHour',
  minute: 'toMinute',
  second: 'toSecond',
  dow: 'toDayOfWeek',
  doy: 'toDayOfYear',
  quarter: 'toQuarter',
};

/** HogQL's names that are a form of calls, as HogQL prints them, by the number of arguments they take. */
/** Calls a form made that keep a name HogQL gives a meaning of its own, so they are not made again. */
const MADE = new WeakSet<Expr>();
const made = (e: Expr): Expr => (MADE.add(e), e);

/** ISO 639-1 codes and their English names, for HogQL's languageCodeToName (PostHog's `transform` of a list). */
const LANGUAGES = Object.entries(languages).map(([code, l]) => [code, l.name] as const);

const FORMS: Readonly<Record<string, { readonly arity: readonly number[]; readonly form: Form }>> = {
  languageCodeToName: {
    arity: [1],
    form: ([code]) =>
      fn('transform', [
        code!,
        { kind: 'array', items: LANGUAGES.map(([c]) => str(c)) },
        { kind: 'array', items: LANGUAGES.map(([, name]) => str(name)) },
        str('Unknown'),
      ]),
  },
  // As HogQL: a value that is not an IP address is '::', which no range holds (ClickHouse would fail the query).
  isIPAddressInRange: {
    arity: [2],
    form: ([address, range]) => {
      const text = fn('ifNull', [fn('toString', [address!]), str('')]);
      const valid: Expr = { kind: 'or', operands: [fn('isIPv4String', [text]), fn('isIPv6String', [text])] };
      return made(fn('isIPAddressInRange', [fn('if', [valid, text, str('::')]), range!]));
    },
  },
  // As HogQL: a row before the first (after the last) is NULL, not the type's default, and the frame is the
  // whole partition unless one is written, so lead() sees the rows after the current one.
  lag: { arity: [1, 2, 3], form: (args, e) => inFrame('lagInFrame', args, e) },
  lead: { arity: [1, 2, 3], form: (args, e) => inFrame('leadInFrame', args, e) },
  // ClickHouse wants the default as a Float64; HogQL takes any number (toFloatOrDefault(x, 0)).
  toFloatOrDefault: {
    arity: [1, 2],
    form: ([x, d]) => fn('toFloat64OrDefault', d ? [x!, fn('toFloat64', [d])] : [x!]),
  },
  // HogQL's table cell of a sparkline chart: a tagged tuple its front end draws.
  sparkline: {
    arity: [1, 2],
    form: ([data, labels]) => ({
      kind: 'tuple',
      items: [
        str('__hx_tag'),
        str('Sparkline'),
        str('data'),
        data!,
        ...(labels ? [str('labels'), labels] : []),
      ],
    }),
  },
  // The HogQLX components PostHog's functions make: a replay button for a session, a CSP report's explainer.
  ...Object.fromEntries(
    LOOKUP_FUNCTION_NAMES.map((name) => [
      name,
      { arity: [1], form: ([x]: readonly Expr[]) => lookupCall(name, x!) },
    ]),
  ),
  recordingButton: {
    arity: [1, 2],
    form: ([session, status]) => ({
      kind: 'tuple',
      items: [
        str('__hx_tag'),
        str('RecordingButton'),
        str('sessionId'),
        session!,
        str('recordingStatus'),
        status ?? { kind: 'field', chain: ['properties', '$recording_status'] },
      ],
    }),
  },
  explainCSPReport: {
    arity: [1],
    form: ([properties]) => ({
      kind: 'tuple',
      items: [str('__hx_tag'), str('ExplainCSPReport'), str('properties'), properties!],
    }),
  },
  json_agg: { arity: [1], form: ([x]) => fn('toJSONString', [fn('groupArray', [x!])]) },
  string_agg: { arity: [2], form: ([x, sep]) => fn('arrayStringConcat', [fn('groupArray', [x!]), sep!]) },
  every: { arity: [1], form: ([x]) => fn('toBool', [fn('min', [x!])]) },
  md5: { arity: [1], form: ([x]) => fn('hex', [fn('MD5', [x!])]) },
  split_part: {
    arity: [3],
    form: ([s, sep, n]) => fn('arrayElement', [fn('splitByString', [sep!, s!]), n!]),
  },
  date_part: {
    arity: [2],
    form: ([part, dt]) => {
      const direct = part!.kind === 'string' ? DATE_PARTS[part.value] : undefined;
      if (direct !== undefined) return fn(direct, [dt!]);
      const branches = Object.entries(DATE_PARTS).flatMap(([p, f]): Expr[] => [
        { kind: 'binary', op: '=', left: part!, right: str(p) },
        fn(f, [dt!]),
      ]);
      return fn('multiIf', [...branches, { kind: 'null' }]);
    },
  },
  to_timestamp: { arity: [1], form: ([x]) => fn('toDateTime', [fn('fromUnixTimestamp', [x!])]) },
  make_interval: {
    arity: [6],
    form: (args) =>
      ['Year', 'Month', 'Day', 'Hour', 'Minute', 'Second']
        .map((unit, i) => fn(`toInterval${unit}`, [args[i]!]))
        .reduce((sum, next) => ({ kind: 'binary', op: '+', left: sum, right: next })),
  },
  make_timestamptz: {
    arity: [7],
    form: (args) => fn('toTimeZone', [fn('makeDateTime', args.slice(0, 6)), args[6]!]),
  },
  // HogQL's `timezone(tz, time)` (PostgreSQL's); with no arguments it stays ClickHouse's.
  timezone: { arity: [2], form: ([tz, time]) => fn('toTimeZone', [time!, tz!]) },
  date_bin: {
    arity: [3],
    form: ([interval, dt, origin]) => fn('toStartOfInterval', [dt!, interval!, origin!]),
  },
  sortablesemver: {
    arity: [1],
    form: ([x]) =>
      fn('arrayMap', [
        {
          kind: 'lambda',
          params: ['__part'],
          body: fn('toInt64OrNull', [{ kind: 'field', chain: ['__part'] }]),
        },
        fn('splitByChar', [
          str('.'),
          fn('coalesce', [
            fn('nullIf', [fn('extract', [fn('assumeNotNull', [x!]), str(SEMVER)]), str('')]),
            str('_'),
          ]),
        ]),
      ]),
  },
};

/** Forms matched whatever the case of the name, as HogQL matches them. */
const CASE_INSENSITIVE_FORMS = new Set(['sortablesemver']);

/**
 * The call HogQL means by `e` when its name is HogQL's own (before the arguments are resolved: the result is
 * resolved and checked like any call), or `e` itself. Throws for a HogQL name Weir refuses, or a form given
 * arguments it cannot take.
 */
export function hogqlCall(e: Call): Expr {
  if (MADE.has(e)) return e;
  const refused = HOGQL_REFUSED[e.name.toLowerCase()];
  if (refused !== undefined)
    throw new QueryResolveError(`function ${shown(e.name)} is not allowed: ${refused}`, e.pos);
  if (AGGREGATE_BY_NAME.has(e.name.toLowerCase())) checkAggregateName(e);
  const renamed = Object.hasOwn(RENAMES, e.name)
    ? RENAMES[e.name]
    : e.args.length === 1 && Object.hasOwn(ONE_ARGUMENT_RENAMES, e.name)
      ? ONE_ARGUMENT_RENAMES[e.name]
      : undefined;
  if (renamed !== undefined) return { ...e, name: renamed };
  const written = Object.hasOwn(CASTS, e.name) || e.name === 'toDecimal' || formOf(e) !== undefined;
  if (!written) return e;
  const windowed = e.name === 'lag' || e.name === 'lead';
  if (e.params !== null || (e.over !== null && !windowed) || e.distinct) {
    throw new QueryResolveError(`${shown(e.name)} takes no parameters, DISTINCT or OVER`, e.pos);
  }
  if (Object.hasOwn(CASTS, e.name)) {
    arity(e, [1]);
    return fn('accurateCastOrNull', [e.args[0]!, str(CASTS[e.name]!)], e.pos);
  }
  if (e.name === 'toDecimal') {
    arity(e, [2]);
    const scale = e.args[1]!;
    if (scale.kind !== 'number' || !/^\d{1,2}$/.test(scale.text) || Number(scale.text) > 18) {
      throw new QueryResolveError(
        'toDecimal(x, scale) takes a scale from 0 to 18, written as a number',
        e.pos,
      );
    }
    return fn('accurateCastOrNull', [e.args[0]!, str(`Decimal64(${Number(scale.text)})`)], e.pos);
  }
  const form = formOf(e)!;
  arity(e, form.arity);
  const out = form.form(e.args, e);
  const placed = { ...out, pos: e.pos };
  if (MADE.has(out)) MADE.add(placed);
  return placed;
}

const lookupLambdas = new Map<string, Expr>();

/** A channel-definitions lookup of `x`: the lambda applied to it (channel-type.ts has why it is a lambda). */
function lookupCall(name: string, x: Expr): Expr {
  let fn_ = lookupLambdas.get(name);
  if (fn_ === undefined) {
    const q = parseDialect(`SELECT arrayMap(${lookupLambdaText(name)}, [])`);
    const c = q.kind === 'select' ? q.columns[0] : undefined;
    if (c?.kind !== 'call') throw new Error('a lookup lambda is a call');
    fn_ = c.args[0]!;
    lookupLambdas.set(name, fn_);
  }
  return fn('arrayElement', [
    fn('arrayMap', [fn_, { kind: 'array', items: [x] }]),
    { kind: 'number', text: '1' },
  ]);
}

function inFrame(name: string, [x, ...rest]: readonly Expr[], e: Call): Expr {
  const over: Call['over'] =
    e.over?.kind === 'windowSpec' && e.over.frame === null
      ? {
          ...e.over,
          frame: {
            kind: 'windowFrame',
            unit: 'rows',
            start: { kind: 'frameBound', type: 'preceding', offset: null },
            end: { kind: 'frameBound', type: 'following', offset: null },
          },
        }
      : e.over;
  return { ...e, name, args: [fn('toNullable', [x!]), ...rest], over };
}

function formOf(e: Call): (typeof FORMS)[string] | undefined {
  const key = CASE_INSENSITIVE_FORMS.has(e.name.toLowerCase()) ? e.name.toLowerCase() : e.name;
  if (key === 'timezone' && e.args.length !== 2) return undefined;
  return Object.hasOwn(FORMS, key) ? FORMS[key] : undefined;
}

/** Functions that take an aggregate function by name, as text: the name must be one a query may call. */
const AGGREGATE_BY_NAME = new Set(['arrayreduce', 'arrayreduceinranges', 'initializeaggregation']);

function checkAggregateName(e: Call): void {
  const first = e.args[0];
  const name =
    first?.kind === 'string'
      ? /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(\(.*\))?\s*$/s.exec(first.value)?.[1]
      : undefined;
  if (name === undefined) {
    throw new QueryResolveError(
      `${shown(e.name)} takes the aggregate function's name as a string first, like 'sum' or 'quantile(0.9)'`,
      e.pos,
    );
  }
  if (functionKind(name) !== 'aggregate') {
    throw new QueryResolveError(
      `${shown(e.name)}: ${shown(name)} is not an aggregate function a query may call`,
      e.pos,
    );
  }
}

function arity(e: Call, allowed: readonly number[]): void {
  if (allowed.includes(e.args.length)) return;
  const n =
    allowed.length === 1 ? `${allowed[0]}` : `${allowed.slice(0, -1).join(', ')} or ${allowed.at(-1)}`;
  throw new QueryResolveError(
    `${shown(e.name)} takes ${n} argument${allowed.at(-1) === 1 ? '' : 's'}, not ${e.args.length}`,
    e.pos,
  );
}

/** Functions whose result is text, for HogQL's overloads of `toDate` and `toDateTime` by argument type. */
const TEXT_RESULTS = new Set(
  words(`
    jsonextractstring jsonextractraw tostring concat substring substringutf8 lower upper lowerutf8 upperutf8
    replaceall replaceone replaceregexpall replaceregexpone extract trimboth trimleft trimright trim formatdatetime
    leftutf8 rightutf8 left right
  `),
);

function isText(e: Expr): boolean {
  switch (e.kind) {
    case 'string':
    case 'concat':
      return true;
    case 'call': {
      const name = e.name.toLowerCase();
      if (name === 'jsonextract') {
        const type = e.args.at(-1);
        return type?.kind === 'string' && /^(Nullable\()?String\)?$/.test(type.value);
      }
      return TEXT_RESULTS.has(name);
    }
    default:
      return false;
  }
}

/**
 * HogQL's `toDate(x)` and `toDateTime(x)` with one argument (after it is resolved): text is parsed, NULL when
 * it does not parse (`toDateOrNull`, `parseDateTime64BestEffortOrNull`); a date, a time or a number is
 * converted (`toDate`, `toDateTime`). The resolver has no types, so text is what is seen to be text: a string,
 * a property read as text, a function that returns text. The name to call, maybe `name` itself.
 */
export function hogqlOverload(name: string, args: readonly Expr[]): string {
  if (args.length !== 1) return name;
  switch (name) {
    case 'toDate':
      return isText(args[0]!) ? 'toDateOrNull' : 'toDate';
    case 'toDateTime':
      return isText(args[0]!) ? 'parseDateTime64BestEffortOrNull' : 'toDateTime';
    default:
      return name;
  }
}

/** Every HogQL name Weir takes, for the test that each reaches a ClickHouse function. */
export const HOGQL_ALLOWED: readonly string[] = [
  ...HOGQL_SAME_NAME,
  ...Object.keys(RENAMES),
  ...Object.keys(ONE_ARGUMENT_RENAMES),
  ...Object.keys(CASTS),
  'toDecimal',
  'toDate',
  'toDateTime',
  ...Object.keys(FORMS),
];
