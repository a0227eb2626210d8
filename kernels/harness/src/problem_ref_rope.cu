// The GPU reference of the library's rope (kfleet-measure's; problem_reference.hpp): the
// library's code, never a job's, compiled here so that the harness's sources alone build it.
#include "../../problems/rope/reference.cu"
