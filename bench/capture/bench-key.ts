/**
 * The project API key every server the bench starts is given, and every request the generator sends
 * carries: one constant, so a target and the generator can never disagree about it.
 */
export const API_KEY = 'phc_bench';
