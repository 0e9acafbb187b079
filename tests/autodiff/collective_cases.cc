// The op cases (tests/autodiff/support/op_case.h) of ops/collective.cc. In one
// process the communicator is the identity, so these check the packing,
// the unpacking and the gradient rules (an all-reduce's gradient is an
// all-reduce); tests/mpi/ checks the sums over ranks.

#include "ops/collective.h"
#include "ops/elementwise.h"
#include "tests/autodiff/support/op_case.h"

namespace dagrad::testing {

DAGRAD_OP_CASE(all_reduce,
               .configs = {{.name = "small",
                            .build = Over({{"x", {3, 4}}},
                                          [](Graph&, const In& in) {
                                            return AllReduce(Mul(in[0], in[0]));
                                          })},
                           {.name = "scalar",
                            .build = Over({{"x", {}}},
                                          [](Graph&, const In& in) { return AllReduce(in[0]); })}},
               .bench = [](CaseBuilder& b, DType d) {
                 b.Out(AllReduce(b.Input("x", d, {1024, 1024})));
               });

// A bucket that starts inside its first gradient and ends inside its last
// one, and a bucket of one whole gradient.
DAGRAD_OP_CASE(all_reduce_start,
               .configs = {{.name = "split_ends",
                            .build = Over({{"a", {2, 3}}, {"b", {4}}, {"c", {3, 2}}},
                                          [](Graph&, const In& in) {
                                            return WaitAllReduce(
                                                StartAllReduce({in[0], in[1], in[2] * in[2]}, 2, 5));
                                          })},
                           {.name = "whole",
                            .build = Over({{"a", {5}}},
                                          [](Graph&, const In& in) {
                                            return WaitAllReduce(StartAllReduce({in[0]}, 0, 5));
                                          })}},
               .bench = [](CaseBuilder& b, DType d) {
                 b.Out(WaitAllReduce(StartAllReduce(
                     {b.Input("a", d, {512, 1024}), b.Input("b", d, {512, 1024})}, 0, 512 * 1024)));
               });

DAGRAD_OP_CASE(all_reduce_wait,
               .configs = {{.name = "one_piece",
                            .build = Over({{"a", {2, 2}}, {"b", {3}}},
                                          [](Graph&, const In& in) {
                                            return Exp(WaitAllReduce(
                                                StartAllReduce({in[0], in[1]}, 1, 2)));
                                          })}});

}  // namespace dagrad::testing
