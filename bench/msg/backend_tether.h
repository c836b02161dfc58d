/* Between backend_tether.c and its model files (backend_tether_gpu.cu in CUDA builds, backend_tether_cpu.c
 * otherwise): the world, the error check, and the models beyond "host". */
#ifndef TETHER_BENCH_MSG_BACKEND_TETHER_H
#define TETHER_BENCH_MSG_BACKEND_TETHER_H

#include <stddef.h>

#include "msg_backend.h"
#include "tether/tether.h"

#ifdef __cplusplus
extern "C" {
#endif

tether_t mbt_world(void);                           /* valid after mb_init */
void mbt_ok(tether_status_t s, const char* call);   /* a failed call: message, exit 1 */
const mb_model_t* mbt_gpu_models(size_t* n);        /* stream, kernel (CUDA builds); none otherwise */

#ifdef __cplusplus
}
#endif

#endif /* TETHER_BENCH_MSG_BACKEND_TETHER_H */
