/* C callers of the core C API's enum-taking calls (tests/unit/test_enum_args_core.cpp). In C an enum argument may hold
 * any value of its compatible integer type, so a C program can pass an out-of-range one; in C++ merely loading such a
 * value is undefined (UBSan -fsanitize=enum halts on it). These wrappers take each enum as an int and pass it through
 * as the enum, as a C caller would. */
#include <stdint.h>
#include <string.h>

#include "tether/tether.h"

const char* enum_status_string(int s) { return tether_status_string((tether_status_t)s); }

size_t enum_dtype_size(int type) { return tether_dtype_size((tether_dtype_t)type); }

tether_status_t enum_malloc_kind(tether_t w, int kind, void** ptr) {
  return tether_malloc_kind(w, (tether_seg_kind_t)kind, 0, 64, ptr);
}

tether_status_t enum_atomic(tether_t w, int op, int type, void* dest, int on_stream, void* stream) {
  uint64_t value = 1, cond = 0, fetched = 0;
  if (on_stream) /* value and cond are read at the call; no fetched (it would be written when the stream runs) */
    return tether_atomic_on_stream(w, (tether_amo_t)op, (tether_dtype_t)type, dest, &value, &cond, NULL,
                                   tether_my_pe(w), stream);
  return tether_atomic(w, (tether_amo_t)op, (tether_dtype_t)type, dest, &value, &cond, &fetched, tether_my_pe(w));
}

/* The 14 wait/test forms on one int64 ivar holding 0, compared with 0. form: 0 wait_until, 1 test, then
 * wait_until_{all,any,some}, test_{all,any,some}, each scalar (2..7) and _vector (8..13). */
tether_status_t enum_wait(tether_t w, int form, void* ivar, int type, int cmp) {
  const tether_dtype_t t = (tether_dtype_t)type;
  const tether_cmp_t c = (tether_cmp_t)cmp;
  const int64_t value = 0;
  int result = 0;
  size_t index = 0, indices[1], count = 0;
  switch (form) {
    case 0: return tether_wait_until(w, ivar, t, c, &value);
    case 1: return tether_test(w, ivar, t, c, &value, &result);
    case 2: return tether_wait_until_all(w, ivar, 1, NULL, t, c, &value);
    case 3: return tether_wait_until_any(w, ivar, 1, NULL, t, c, &value, &index);
    case 4: return tether_wait_until_some(w, ivar, 1, NULL, t, c, &value, indices, &count);
    case 5: return tether_test_all(w, ivar, 1, NULL, t, c, &value, &result);
    case 6: return tether_test_any(w, ivar, 1, NULL, t, c, &value, &index);
    case 7: return tether_test_some(w, ivar, 1, NULL, t, c, &value, indices, &count);
    case 8: return tether_wait_until_all_vector(w, ivar, 1, NULL, t, c, &value);
    case 9: return tether_wait_until_any_vector(w, ivar, 1, NULL, t, c, &value, &index);
    case 10: return tether_wait_until_some_vector(w, ivar, 1, NULL, t, c, &value, indices, &count);
    case 11: return tether_test_all_vector(w, ivar, 1, NULL, t, c, &value, &result);
    case 12: return tether_test_any_vector(w, ivar, 1, NULL, t, c, &value, &index);
    case 13: return tether_test_some_vector(w, ivar, 1, NULL, t, c, &value, indices, &count);
    default: return TETHER_ERR_INTERNAL;
  }
}

/* Signal calls on this PE's word sig (buf: 8 symmetric bytes for the put forms). form: 0 put_signal, 1 put_signal_nbi,
 * 2 signal_op, 3 putmem_signal_on_stream, 4 signal_op_on_stream. */
tether_status_t enum_signal_op(tether_t w, int form, void* buf, uint64_t* sig, int sig_op, void* stream) {
  const tether_signal_op_t op = (tether_signal_op_t)sig_op;
  static const uint64_t src = 7; /* the stream form reads it when the stream runs */
  const int me = tether_my_pe(w);
  switch (form) {
    case 0: return tether_put_signal(w, buf, &src, sizeof src, sig, 1, op, me);
    case 1: return tether_put_signal_nbi(w, buf, &src, sizeof src, sig, 1, op, me);
    case 2: return tether_signal_op(w, sig, 1, op, me);
    case 3: return tether_putmem_signal_on_stream(w, buf, &src, sizeof src, sig, 1, op, me, stream);
    case 4: return tether_signal_op_on_stream(w, sig, 1, op, me, stream);
    default: return TETHER_ERR_INTERNAL;
  }
}

/* Signal and word waits whose condition (sig cmp 0, sig holding 0) holds at once for EQ. form: 0 signal_wait_until,
 * 1 signal_wait_until_on_stream, 2 wait_until_on_stream (type as given). */
tether_status_t enum_signal_wait(tether_t w, int form, uint64_t* sig, int type, int cmp, void* stream) {
  const tether_cmp_t c = (tether_cmp_t)cmp;
  const uint64_t value = 0;
  uint64_t seen = 0;
  switch (form) {
    case 0: return tether_signal_wait_until(w, sig, c, 0, &seen);
    case 1: return tether_signal_wait_until_on_stream(w, sig, c, 0, stream);
    case 2: return tether_wait_until_on_stream(w, sig, (tether_dtype_t)type, c, &value, stream);
    default: return TETHER_ERR_INTERNAL;
  }
}

/* tether_prepare of one operation of the given kind with the given sig_op and cmp fields (a SIGNAL_WAIT / PUT_SIGNAL
 * on this PE's word sig, a PUT of 8 bytes into buf). */
tether_status_t enum_prepare(tether_t w, int kind, int sig_op, int cmp, void* buf, uint64_t* sig,
                             tether_op_set_t* set) {
  static const uint64_t src = 7;
  tether_op_desc_t op;
  memset(&op, 0, sizeof op);
  op.kind = (tether_op_kind_t)kind;
  op.pe = tether_my_pe(w);
  op.dest = buf;
  op.src = &src;
  op.nbytes = sizeof src;
  op.sig_addr = sig;
  op.signal = 0;
  op.sig_op = (tether_signal_op_t)sig_op;
  op.cmp = (tether_cmp_t)cmp;
  return tether_prepare(w, &op, 1, set);
}
