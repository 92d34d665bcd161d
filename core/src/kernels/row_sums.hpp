// Sums over a row of floats in double, for the norms' statistics (RMSNorm, LayerNorm): eight
// partial sums (four pairs of SSE2 lanes) added in a fixed order at the end. One running sum
// waited on its own add for every element (four cycles): the norms took 2% of a forward.
// The order is fixed, so a row gives the same bits wherever it lies and on every CPU.
#pragma once

namespace mhaviz::detail {

// Σ x[i] over n floats.
double row_sum(const float* x, int n);
// Σ (x[i] − mean)² over n floats (mean 0: the sum of squares, each square exact in double).
double row_sum_squared_deviations(const float* x, int n, double mean);

}  // namespace mhaviz::detail
