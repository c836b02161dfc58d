// The device API from an installed tether (tests/install/install_check.sh, through tether::device): its header is
// usable from plain C++ with a CPU handle, so this runs on any machine. At 2+ PEs each PE stores its id + 1000 into
// the next PE's symmetric word with tether::device::p, then the device barrier; prints "device ok" on PE 0.
#include <tether/device.cuh>

#include <cstdio>

int main() {
  tether_t w;
  if (tether_init(&w) != TETHER_SUCCESS) return std::fprintf(stderr, "device: init: %s\n", tether_last_error()), 1;
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  long* x = nullptr;
  tether_device_handle_t h;
  if (tether_malloc_kind(w, TETHER_SEG_HOST, 0, sizeof *x, reinterpret_cast<void**>(&x)) != TETHER_SUCCESS ||
      tether_device_handle_cpu(w, &h) != TETHER_SUCCESS)
    return std::fprintf(stderr, "device: setup: %s\n", tether_last_error()), 1;
  tether::device::p(h, x, 1000L + me, (me + 1) % n);
  tether::device::barrier_all(h);
  const long want = 1000L + (me + n - 1) % n;
  if (*x != want) return std::fprintf(stderr, "device: PE %d: x = %ld, want %ld\n", me, *x, want), 1;
  if (tether_barrier_all(w) != TETHER_SUCCESS) return 1;
  if (me == 0) std::printf("device ok: %d PEs\n", n);
  tether_free(w, x);
  return tether_finalize(w) == TETHER_SUCCESS ? 0 : 1;
}
