// The GPU reference of the library's topk (kfleet-measure's; problem_reference.hpp): the
// library's code, never a job's, compiled here so that the harness's sources alone build it.
#include "../../problems/topk/reference.cu"
