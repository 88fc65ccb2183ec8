/**
 * The functions a query may call: generous for analytics, nothing that reaches outside the query's own rows.
 *
 * Allowed: aggregates (with any combinator chain: `countIf`, `uniqExactIf`, `sumArray`, `sumState`,
 * `uniqMerge`, `avgForEach`, `groupArrayResample`, …), parametric aggregates (`quantile(0.9)(x)`,
 * `windowFunnel`, `retention`, `sequenceMatch`), window functions, and scalar functions on arrays, strings,
 * regular expressions (RE2: no catastrophic backtracking), dates, JSON, URLs, maps, tuples, conditionals,
 * type conversions, maths, hashes, IPs, UUIDs and random numbers.
 *
 * Refused, by not being listed: anything that reads outside the query (`file`, `url`, `s3`, `remote*`,
 * `input`, `joinGet`, `dictGet*` and every dictionary function, `hasColumnInTable`), reveals the server
 * (`currentDatabase`, `currentUser`, `hostName`, `version`, `getSetting`, `getMacro`, `getServerPort`,
 * `uptime`, `serverUUID`, query ids), has side effects or stalls (`sleep`, `sleepEachRow`, `generateSerialID`,
 * `throwIf`, `aggThrow`), runs models (`catboostEvaluate`, `AI*`, ML methods), or introspects the binary
 * (`addressToLine`, `demangle`). `throwIf` is refused because an error is an oracle: whether it fires tells
 * something about the rows it saw. Table functions are refused by the resolver wherever they stand.
 *
 * HogQL's own names (`toInt`, `sparkline`, `split_part`, …) are written as the calls HogQL means before this
 * list is consulted (hogql-functions.ts), so the list judges what actually runs.
 *
 * Names match case-insensitively (ClickHouse's own rule for many functions; for the others ClickHouse then
 * refuses the wrong case itself), combinator suffixes case-sensitively, as ClickHouse matches them.
 */

const words = (text: string): string[] => text.split(/\s+/).filter(Boolean);
const lower = (list: readonly string[]): Set<string> => new Set(list.map((n) => n.toLowerCase()));

const AGGREGATE_NAMES = words(`
  count sum avg min max any anyLast anyHeavy any_value anyRespectNulls anyLastRespectNulls
  first_value last_value first_value_respect_nulls last_value_respect_nulls argMin argMax min_by max_by
  avgWeighted sumWithOverflow sumKahan sumCount sumMap sumMapWithOverflow minMap maxMap
  uniq uniqExact uniqCombined uniqCombined64 uniqHLL12 uniqTheta uniqUpTo countDistinct
  quantile quantiles quantileExact quantilesExact quantileExactLow quantilesExactLow quantileExactHigh
  quantilesExactHigh quantileExactWeighted quantilesExactWeighted quantileExactWeightedInterpolated
  quantilesExactWeightedInterpolated quantileInterpolatedWeighted quantilesInterpolatedWeighted
  quantileTiming quantilesTiming quantileTimingWeighted quantilesTimingWeighted quantileTDigest
  quantilesTDigest quantileTDigestWeighted quantilesTDigestWeighted quantileBFloat16 quantilesBFloat16
  quantileBFloat16Weighted quantilesBFloat16Weighted quantileDeterministic quantilesDeterministic
  quantileGK quantilesGK quantileDD quantilesDD quantileExactInclusive quantilesExactInclusive
  quantileExactExclusive quantilesExactExclusive
  median medianExact medianExactLow medianExactHigh medianExactWeighted medianExactWeightedInterpolated
  medianInterpolatedWeighted medianTiming medianTimingWeighted medianTDigest medianTDigestWeighted
  medianBFloat16 medianBFloat16Weighted medianDeterministic medianGK medianDD
  groupArray groupArrayLast groupUniqArray groupArrayInsertAt groupArrayMovingAvg groupArrayMovingSum
  groupArraySample groupArraySorted groupArrayIntersect groupConcat group_concat array_agg string_agg
  array_concat_agg groupBitAnd groupBitOr groupBitXor groupBitmap groupBitmapAnd groupBitmapOr groupBitmapXor
  BIT_AND BIT_OR BIT_XOR topK topKWeighted approx_top_k approx_top_count approx_top_sum histogram
  stddevPop stddevSamp stddevPopStable stddevSampStable varPop varSamp varPopStable varSampStable
  STD STDDEV STDDEV_POP STDDEV_SAMP VAR_POP VAR_SAMP covarPop covarSamp covarPopStable covarSampStable
  COVAR_POP COVAR_SAMP corr corrStable corrMatrix covarPopMatrix covarSampMatrix skewPop skewSamp
  kurtPop kurtSamp entropy simpleLinearRegression boundingRatio deltaSum deltaSumTimestamp
  exponentialMovingAverage exponentialTimeDecayedAvg exponentialTimeDecayedCount exponentialTimeDecayedMax
  exponentialTimeDecayedSum categoricalInformationValue maxIntersections maxIntersectionsPosition rankCorr
  meanZTest studentTTest welchTTest mannWhitneyUTest kolmogorovSmirnovTest cramersV cramersVBiasCorrected
  theilsU contingency analysisOfVariance anova sparkbar sparkBar largestTriangleThreeBuckets lttb
  windowFunnel retention sequenceMatch sequenceCount sequenceNextNode sequenceMatchEvents
  singleValueOrNull nothing nothingNull nothingUInt64 intervalLengthSum
`);

/** Functions that only make sense with OVER (aggregates may take OVER too). */
const WINDOW_NAMES = words(`
  row_number rank dense_rank percent_rank cume_dist ntile lagInFrame leadInFrame nth_value lag lead
`);

/** The integer, float, decimal, date and other types `toX`, `toXOrZero`, `toXOrNull`, `toXOrDefault` exist for. */
const CONVERTIBLE_TYPES = words(`
  Int8 Int16 Int32 Int64 Int128 Int256 UInt8 UInt16 UInt32 UInt64 UInt128 UInt256 Float32 Float64 BFloat16
  Decimal32 Decimal64 Decimal128 Decimal256 Date Date32 DateTime DateTime32 DateTime64 Time Time64 UUID
  IPv4 IPv6 Bool String
`);
const INTERVAL_UNITS = words(
  'Nanosecond Microsecond Millisecond Second Minute Hour Day Week Month Quarter Year',
);

// `least` / `greatest` keep their arguments' type (min2 / max2 answer Float64): insights bound dates with them.
const SCALAR_NAMES = words(`
  plus minus multiply divide divideOrNull intDiv intDivOrZero intDivOrNull modulo moduloOrZero moduloOrNull
  mod modOrNull positiveModulo positive_modulo pmod pmodOrNull negate abs gcd lcm max2 min2 multiplyDecimal
  divideDecimal byteSwap isFinite isInfinite isNaN ifNotFinite
  least greatest
  equals notEquals less greater lessOrEquals greaterOrEquals and or not xor if multiIf
  in notIn nullIn notNullIn like notLike ilike notILike match REGEXP_MATCHES exists
  e pi exp exp2 exp10 log ln log2 log10 log1p sqrt cbrt erf erfc lgamma tgamma sin cos tan asin acos atan
  atan2 hypot sinh cosh tanh asinh acosh atanh sign sigmoid degrees radians factorial pow power intExp2
  intExp10 widthBucket width_bucket round roundBankers floor ceil ceiling trunc truncate roundToExp2
  roundDuration roundAge roundDown
  CAST accurateCast accurateCastOrNull accurateCastOrDefault toTypeName toColumnTypeName toNullable
  assumeNotNull toLowCardinality toFixedString toStringCutToZero toDecimalString toUnixTimestamp
  toUnixTimestamp64Second toUnixTimestamp64Milli toUnixTimestamp64Micro toUnixTimestamp64Nano
  fromUnixTimestamp fromUnixTimestamp64Second fromUnixTimestamp64Milli fromUnixTimestamp64Micro
  fromUnixTimestamp64Nano FROM_UNIXTIME TO_UNIXTIME parseDateTime parseDateTimeOrNull parseDateTimeOrZero
  parseDateTimeInJodaSyntax parseDateTimeInJodaSyntaxOrNull parseDateTimeInJodaSyntaxOrZero
  parseDateTimeBestEffort parseDateTimeBestEffortOrNull parseDateTimeBestEffortOrZero
  parseDateTimeBestEffortUS parseDateTimeBestEffortUSOrNull parseDateTimeBestEffortUSOrZero
  parseDateTime32BestEffort parseDateTime32BestEffortOrNull parseDateTime32BestEffortOrZero
  parseDateTime64BestEffort parseDateTime64BestEffortOrNull parseDateTime64BestEffortOrZero
  parseDateTime64BestEffortUS parseDateTime64BestEffortUSOrNull parseDateTime64BestEffortUSOrZero
  parseDateTime64 parseDateTime64OrNull parseDateTime64OrZero str_to_date reinterpret reinterpretAsString
  reinterpretAsUInt8 reinterpretAsUInt16 reinterpretAsUInt32 reinterpretAsUInt64 reinterpretAsInt8
  reinterpretAsInt16 reinterpretAsInt32 reinterpretAsInt64 reinterpretAsFloat32 reinterpretAsFloat64
  reinterpretAsDate reinterpretAsDateTime reinterpretAsUUID reinterpretAsFixedString
  now now64 today yesterday curdate current_date current_timestamp localtimestamp UTCTimestamp
  UTC_timestamp timeSlot timeSlots toYear toQuarter toMonth toWeek toISOWeek toISOYear toYearWeek yearweek
  toDayOfYear toDayOfMonth toDayOfWeek toHour toMinute toSecond toMillisecond toStartOfYear toStartOfISOYear
  toStartOfQuarter toStartOfMonth toLastDayOfMonth LAST_DAY toStartOfWeek toLastDayOfWeek toMonday
  toStartOfDay toStartOfHour toStartOfMinute toStartOfSecond toStartOfMillisecond toStartOfMicrosecond
  toStartOfNanosecond toStartOfFiveMinute toStartOfFiveMinutes toStartOfTenMinutes toStartOfFifteenMinutes
  toStartOfInterval toTime toRelativeYearNum toRelativeQuarterNum toRelativeMonthNum toRelativeWeekNum
  toRelativeDayNum toRelativeHourNum toRelativeMinuteNum toRelativeSecondNum toYYYYMM toYYYYMMDD
  toYYYYMMDDhhmmss YYYYMMDDToDate YYYYMMDDhhmmssToDateTime toDaysSinceYearZero fromDaysSinceYearZero
  TO_DAYS FROM_DAYS toModifiedJulianDay fromModifiedJulianDay dateDiff date_diff DATE_DIFF timestampDiff
  timestamp_diff TIMESTAMP_DIFF age dateAdd date_add dateSub date_sub timestampAdd timestamp_add
  timestampSub timestamp_sub addYears addQuarters addMonths addWeeks addDays addHours addMinutes addSeconds
  addMilliseconds addMicroseconds addNanoseconds addInterval addTupleOfIntervals subtractYears
  subtractQuarters subtractMonths subtractWeeks subtractDays subtractHours subtractMinutes subtractSeconds
  subtractMilliseconds subtractMicroseconds subtractNanoseconds subtractInterval subtractTupleOfIntervals
  dateTrunc date_trunc DATE_TRUNC date_bin time_bucket formatDateTime formatDateTimeInJodaSyntax DATE_FORMAT
  toTimeZone toTimezone timeZone timezone timeZoneOf timezoneOf timeZoneOffset timezoneOffset
  toUTCTimestamp fromUTCTimestamp to_utc_timestamp from_utc_timestamp makeDate makeDate32 makeDateTime
  makeDateTime64 monthName dayName YEAR QUARTER MONTH DAY DAYOFMONTH DAYOFWEEK DAYOFYEAR HOUR MINUTE SECOND
  MILLISECOND MICROSECOND NANOSECOND changeYear changeMonth changeDay changeHour changeMinute changeSecond
  formatReadableTimeDelta parseTimeDelta UUIDv7ToDateTime
  empty notEmpty length lengthUTF8 char_length CHAR_LENGTH character_length CHARACTER_LENGTH OCTET_LENGTH
  leftPad rightPad leftPadUTF8 rightPadUTF8 lpad rpad lower upper lowerUTF8 upperUTF8 lcase ucase initcap
  initcapUTF8 isValidUTF8 toValidUTF8 repeat space reverse reverseUTF8 concat concatAssumeInjective
  concatWithSeparator concatWithSeparatorAssumeInjective concat_ws substring substr mid substringUTF8
  substringIndex substringIndexUTF8 SUBSTRING_INDEX byteSlice appendTrailingCharIfAbsent left right
  leftUTF8 rightUTF8 startsWith endsWith startsWithUTF8 endsWithUTF8 trim trimLeft trimRight trimBoth ltrim
  rtrim firstLine format normalizeUTF8NFC normalizeUTF8NFD normalizeUTF8NFKC normalizeUTF8NFKD
  removeAccentsUTF8 encodeXMLComponent decodeXMLComponent decodeHTMLComponent extractTextFromHTML ascii
  soundex punycodeEncode punycodeDecode tryPunycodeDecode idnaEncode idnaDecode tryIdnaEncode
  stringJaccardIndex stringJaccardIndexUTF8 editDistance editDistanceUTF8 levenshteinDistance
  levenshteinDistanceUTF8 damerauLevenshteinDistance jaroSimilarity jaroWinklerSimilarity ngramDistance
  ngramDistanceUTF8 ngramDistanceCaseInsensitive ngramDistanceCaseInsensitiveUTF8 ngramSearch
  ngramSearchUTF8 ngramSearchCaseInsensitive ngramSearchCaseInsensitiveUTF8 position locate instr
  positionCaseInsensitive positionUTF8 positionCaseInsensitiveUTF8 multiSearchAllPositions
  multiSearchAllPositionsUTF8 multiSearchAllPositionsCaseInsensitive multiSearchFirstPosition
  multiSearchFirstIndex multiSearchAny multiSearchAnyCaseInsensitive multiMatchAny multiMatchAnyIndex
  multiMatchAllIndices multiFuzzyMatchAny multiFuzzyMatchAnyIndex multiFuzzyMatchAllIndices extract
  extractAll extractGroups extractAllGroups extractAllGroupsHorizontal extractAllGroupsVertical
  regexpExtract REGEXP_EXTRACT regexpQuoteMeta countSubstrings countSubstringsCaseInsensitive
  countSubstringsCaseInsensitiveUTF8 countMatches countMatchesCaseInsensitive hasToken
  hasTokenCaseInsensitive hasTokenOrNull hasTokenCaseInsensitiveOrNull hasSubsequence
  hasSubsequenceCaseInsensitive hasSubsequenceUTF8 hasSubsequenceCaseInsensitiveUTF8 replaceOne replaceAll
  replace replaceRegexpOne replaceRegexpAll REGEXP_REPLACE translate translateUTF8 splitByChar
  splitByString splitByRegexp splitByWhitespace splitByNonAlpha splitByAlpha arrayStringConcat alphaTokens
  ngrams tokens hex unhex bin unbin char bitmaskToList bitmaskToArray base58Encode base58Decode
  tryBase58Decode base64Encode base64Decode tryBase64Decode base64URLEncode base64URLDecode
  tryBase64URLDecode TO_BASE64 FROM_BASE64 formatReadableSize formatReadableDecimalSize
  formatReadableQuantity parseReadableSize parseReadableSizeOrNull parseReadableSizeOrZero FORMAT_BYTES
  bar visibleWidth countDigits byteSize
  isValidJSON JSONHas JSONLength JSONArrayLength JSON_ARRAY_LENGTH JSONType JSONExtract JSONExtractUInt
  JSONExtractInt JSONExtractFloat JSONExtractBool JSONExtractString JSONExtractRaw JSONExtractArrayRaw
  JSONExtractKeys JSONExtractKeysAndValues JSONExtractKeysAndValuesRaw JSONExtractCaseInsensitive
  JSONExtractStringCaseInsensitive JSONExtractIntCaseInsensitive JSONExtractUIntCaseInsensitive
  JSONExtractFloatCaseInsensitive JSONExtractBoolCaseInsensitive JSONExtractRawCaseInsensitive
  JSONExtractArrayRawCaseInsensitive JSONExtractKeysCaseInsensitive JSONExtractKeysAndValuesCaseInsensitive
  JSONExtractKeysAndValuesRawCaseInsensitive JSONHasCaseInsensitive JSON_EXISTS JSON_QUERY JSON_VALUE
  toJSONString JSONMergePatch jsonMergePatch simpleJSONHas simpleJSONExtractUInt simpleJSONExtractInt
  simpleJSONExtractFloat simpleJSONExtractBool simpleJSONExtractRaw simpleJSONExtractString visitParamHas
  visitParamExtractUInt visitParamExtractInt visitParamExtractFloat visitParamExtractBool
  visitParamExtractRaw visitParamExtractString
  protocol domain domainWithoutWWW domainRFC domainWithoutWWWRFC topLevelDomain topLevelDomainRFC
  firstSignificantSubdomain firstSignificantSubdomainRFC cutToFirstSignificantSubdomain
  cutToFirstSignificantSubdomainWithWWW cutToFirstSignificantSubdomainRFC
  cutToFirstSignificantSubdomainWithWWWRFC port portRFC path pathFull queryString fragment
  queryStringAndFragment extractURLParameter extractURLParameters extractURLParameterNames URLHierarchy
  URLPathHierarchy encodeURLComponent decodeURLComponent encodeURLFormComponent decodeURLFormComponent
  netloc cutWWW cutQueryString cutFragment cutQueryStringAndFragment cutURLParameter
  array range arrayConcat arrayElement arrayElementOrNull has hasAll hasAny hasSubstr indexOf
  indexOfAssumeSorted arrayCount countEqual arrayEnumerate arrayEnumerateUniq arrayEnumerateDense
  arrayEnumerateUniqRanked arrayEnumerateDenseRanked arrayPopBack arrayPopFront arrayPushBack
  arrayPushFront arrayResize arraySlice arraySort arrayReverseSort arrayPartialSort arrayPartialReverseSort
  arrayShuffle arrayPartialShuffle arrayUniq arrayJoin arrayDifference arrayDistinct arrayIntersect
  arrayUnion arraySymmetricDifference arrayReduce arrayReduceInRanges arrayReverse arrayFlatten flatten
  arrayCompact arrayZip arrayZipUnaligned arrayMap arrayFilter arrayFill arrayReverseFill arraySplit
  arrayReverseSplit arrayExists arrayAll arrayFirst arrayFirstOrNull arrayLast arrayLastOrNull
  arrayFirstIndex arrayLastIndex arrayMin arrayMax arraySum arrayAvg arrayProduct arrayCumSum
  arrayCumSumNonNegative arrayFold arrayRotateLeft arrayRotateRight arrayShiftLeft arrayShiftRight
  arrayRandomSample arrayWithConstant arrayDotProduct arrayAUC arrayROCAUC arrayPRAUC arrayLevenshteinDistance
  arrayLevenshteinDistanceWeighted arraySimilarity arrayNormalizedGini arrayRemove array_remove
  array_to_string unnest CARDINALITY emptyArrayUInt8 emptyArrayUInt16 emptyArrayUInt32 emptyArrayUInt64
  emptyArrayInt8 emptyArrayInt16 emptyArrayInt32 emptyArrayInt64 emptyArrayFloat32 emptyArrayFloat64
  emptyArrayDate emptyArrayDateTime emptyArrayString emptyArrayToSingle
  tuple tupleElement untuple tupleHammingDistance tupleToNameValuePairs tupleNames tuplePlus tupleMinus
  tupleMultiply tupleDivide tupleNegate tupleMultiplyByNumber tupleDivideByNumber tupleConcat tupleIntDiv
  tupleIntDivByNumber tupleModulo tupleModuloByNumber dotProduct scalarProduct L1Norm L2Norm L2SquaredNorm
  LinfNorm LpNorm normL1 normL2 normL2Squared normLinf normLp L1Distance L2Distance L2SquaredDistance
  LinfDistance LpDistance distanceL1 distanceL2 distanceL2Squared distanceLinf distanceLp cosineDistance
  distanceCosine L1Normalize L2Normalize LinfNormalize LpNormalize normalizeL1 normalizeL2 normalizeLinf
  normalizeLp
  map mapFromArrays MAP_FROM_ARRAYS mapAdd mapSubtract mapPopulateSeries mapContains mapContainsKey
  mapContainsKeyLike mapContainsValue mapContainsValueLike mapExtractKeyLike mapExtractValueLike mapKeys
  mapValues mapFilter mapApply mapUpdate mapConcat mapExists mapAll mapSort mapReverseSort mapPartialSort
  mapPartialReverseSort mapFromString str_to_map
  isNull isNotNull isNullable isZeroOrNull coalesce ifNull nullIf
  halfMD5 MD4 MD5 sipHash64 sipHash64Keyed sipHash128 sipHash128Keyed sipHash128Reference cityHash64 intHash32
  intHash64 SHA1 SHA224 SHA256 SHA384 SHA512 SHA512_256 BLAKE3 farmHash64 farmFingerprint64 javaHash
  javaHashUTF16LE hiveHash metroHash64 jumpConsistentHash kostikConsistentHash murmurHash2_32 murmurHash2_64
  murmurHash3_32 murmurHash3_64 murmurHash3_128 xxHash32 xxHash64 xxh3 xxh3_128 gccMurmurHash CRC32 CRC32IEEE
  CRC64 wyHash64 yandexConsistentHash ngramSimHash ngramSimHashUTF8 wordShingleSimHash ngramMinHash
  wordShingleMinHash
  generateUUIDv4 generateUUIDv7 UUIDStringToNum UUIDNumToString toUUIDOrZero UUIDToNum
  IPv4NumToString IPv4StringToNum IPv4StringToNumOrNull IPv4StringToNumOrDefault IPv4NumToStringClassC
  IPv6NumToString IPv6StringToNum IPv6StringToNumOrNull IPv6StringToNumOrDefault IPv4ToIPv6 cutIPv6
  IPv4CIDRToRange IPv6CIDRToRange isIPv4String isIPv6String isIPAddressInRange INET_ATON INET_NTOA
  INET6_ATON INET6_NTOA MACNumToString MACStringToNum MACStringToOUI
  rand rand32 rand64 randCanonical randConstant randomString randomFixedString randomPrintableASCII
  randomStringUTF8 fuzzBits randUniform randNormal randLogNormal randBinomial randNegativeBinomial
  randPoisson randBernoulli randExponential randChiSquared randStudentT randFisherF
  bitAnd bitOr bitXor bitNot bitShiftLeft bitShiftRight bitRotateLeft bitRotateRight bitSlice bitTest
  bitTestAll bitTestAny bitCount bitHammingDistance
  bitmapBuild bitmapToArray bitmapSubsetInRange bitmapSubsetLimit subBitmap bitmapContains bitmapHasAny
  bitmapHasAll bitmapCardinality bitmapMin bitmapMax bitmapTransform bitmapAnd bitmapOr bitmapXor
  bitmapAndnot bitmapAndCardinality bitmapOrCardinality bitmapXorCardinality bitmapAndnotCardinality
  greatCircleDistance geoDistance greatCircleAngle pointInEllipses pointInPolygon geohashEncode
  geohashDecode geohashesInBox
  transform finalizeAggregation initializeAggregation  
    isConstant ignore identity materialize
  getSizeOfEnumType getSubcolumn defaultValueOfArgumentType defaultValueOfTypeName isDecimalOverflow
  minSampleSizeContinuous minSampleSizeConversion blockSize rowNumberInBlock rowNumberInAllBlocks
  blockNumber errorCodeToName variantElement variantType lowCardinalityIndices lowCardinalityKeys
  sqid sqidEncode sqidDecode seriesOutliersDetectTukey seriesDecomposeSTL seriesPeriodDetectFFT
  reinterpretAsUInt128 reinterpretAsUInt256 reinterpretAsInt128 reinterpretAsInt256 nowInBlock dateName
  multiSearchAllPositionsCaseInsensitiveUTF8 multiSearchAnyUTF8 multiSearchAnyCaseInsensitiveUTF8
  multiSearchFirstIndexUTF8 multiSearchFirstIndexCaseInsensitive multiSearchFirstIndexCaseInsensitiveUTF8
  multiSearchFirstPositionUTF8 multiSearchFirstPositionCaseInsensitive multiSearchFirstPositionCaseInsensitiveUTF8
  hasAllTokens hasAnyTokens indexHint toModifiedJulianDayOrNull fromModifiedJulianDayOrNull convertCharset
  tumble hop tumbleStart tumbleEnd hopStart hopEnd grouping
`);

const conversions = CONVERTIBLE_TYPES.flatMap((t) => [
  `to${t}`,
  `to${t}OrZero`,
  `to${t}OrNull`,
  `to${t}OrDefault`,
]);
const intervals = INTERVAL_UNITS.flatMap((u) => [`toInterval${u}`]);

const AGGREGATES = lower(AGGREGATE_NAMES);
const WINDOWS = lower(WINDOW_NAMES);
const SCALARS = lower([...SCALAR_NAMES, ...conversions, ...intervals, 'toBool']);

/** ClickHouse's aggregate combinators, longest first so that `MergeState` is not read as `State`. */
const COMBINATORS = [
  'SimpleState',
  'MergeState',
  'OrDefault',
  'Resample',
  'Distinct',
  'ForEach',
  'OrNull',
  'ArgMin',
  'ArgMax',
  'State',
  'Merge',
  'Array',
  'Map',
  'If',
];

export type FunctionKind = 'aggregate' | 'window' | 'scalar';

/**
 * What `name` is, if a query may call it: an aggregate (maybe with combinators), a window function or a
 * scalar function. Undefined for anything else.
 */
export function functionKind(name: string): FunctionKind | undefined {
  const lowered = name.toLowerCase();
  if (AGGREGATES.has(lowered)) return 'aggregate';
  if (WINDOWS.has(lowered)) return 'window';
  if (SCALARS.has(lowered)) return 'scalar';
  let base = name;
  for (let stripped = true; stripped;) {
    stripped = false;
    for (const c of COMBINATORS) {
      if (base.length > c.length && base.endsWith(c)) {
        base = base.slice(0, -c.length);
        if (AGGREGATES.has(base.toLowerCase())) return 'aggregate';
        stripped = true;
        break;
      }
    }
  }
  return undefined;
}

/** An aggregate's name without its combinators, lower-cased (`windowFunnelIf` → `windowfunnel`). */
export function baseName(name: string): string {
  let base = name;
  for (let stripped = true; stripped && !AGGREGATES.has(base.toLowerCase());) {
    stripped = false;
    for (const c of COMBINATORS) {
      if (base.length > c.length && base.endsWith(c)) {
        base = base.slice(0, -c.length);
        stripped = true;
        break;
      }
    }
  }
  return base.toLowerCase();
}

/** A few names people reach for that Weir refuses, with what to do instead. */
export const REFUSED_HINTS: Readonly<Record<string, string>> = {
  throwif: 'a query cannot raise errors on purpose',
  sleep: 'a query cannot pause',
  sleepeachrow: 'a query cannot pause',
  currentdatabase: 'every table is already the project’s own',
  getsetting: 'Weir sets the limits of each run itself',
  dictget: 'dictionaries are not reachable from a query',
  file: 'a query reads only the project’s tables',
  url: 'a query reads only the project’s tables',
  s3: 'a query reads only the project’s tables',
  remote: 'a query reads only the project’s tables',
  joinget: 'a query reads only the project’s tables',
  hascolumnintable: 'a query reads only the project’s tables',
  neighbor: 'its result depends on how rows fall into blocks; use lagInFrame or leadInFrame with OVER',
  runningdifference: 'its result depends on how rows fall into blocks; use lagInFrame with OVER',
  runningdifferencestartingwithfirstvalue:
    'its result depends on how rows fall into blocks; use lagInFrame with OVER',
  runningaccumulate: 'its result depends on how rows fall into blocks; use a window function',
};
