// StreamRuntime::barrierForm (core/stream_runtime.h): which form a stream barrier takes from TETHER_STREAM_BARRIER,
// whether the stream is being captured (the CPU emulation built to report a capture) and whether some GPU of the job
// is used by two or more PEs; a bad value is refused at configure with a message naming it.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "base/config.h"
#include "core/stream_ops.h"
#include "core/stream_runtime.h"

namespace {

using tether::BarrierForm;
using tether::Config;
using tether::StreamRuntime;

// The form TETHER_STREAM_BARRIER=mode gives a barrier enqueued on a stream that is (or is not) being captured.
BarrierForm formOf(const char* mode, bool sharedGpu, bool capturing) {
  Config c;
  c.set("TETHER_STREAM_BARRIER", mode);
  StreamRuntime rt;
  EXPECT_TRUE(rt.configure(c, sharedGpu).isOk()) << mode;
  std::unique_ptr<tether::StreamOps> so = tether::createCpuStreamOps(10, true, capturing);
  void* stream = nullptr;
  EXPECT_TRUE(so->createStream(&stream).isOk());
  BarrierForm f = BarrierForm::Epochs;
  EXPECT_TRUE(rt.barrierForm(*so, stream, &f).isOk());
  return f;
}

TEST(StreamBarrierForm, AutoTakesEpochsOutsideACaptureAndAReplayableFormInside) {
  for (bool shared : {false, true}) EXPECT_EQ(formOf("auto", shared, false), BarrierForm::Epochs) << shared;
  // Captured: PEs sharing a GPU take memops with resets (a spinning kernel waits for time slices there), else the
  // world team's sync kernel.
  EXPECT_EQ(formOf("auto", true, true), BarrierForm::Resets);
  EXPECT_EQ(formOf("auto", false, true), BarrierForm::Sync);
}

TEST(StreamBarrierForm, KernelAndResetAreTakenAlways) {
  for (bool shared : {false, true})
    for (bool capturing : {false, true}) {
      EXPECT_EQ(formOf("kernel", shared, capturing), BarrierForm::Sync) << shared << capturing;
      EXPECT_EQ(formOf("reset", shared, capturing), BarrierForm::Resets) << shared << capturing;
    }
}

TEST(StreamBarrierForm, ABadValueIsRefusedNamingIt) {
  Config c;
  c.set("TETHER_STREAM_BARRIER", "memops");
  StreamRuntime rt;
  const tether::Status s = rt.configure(c, false);
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(s.message().find("TETHER_STREAM_BARRIER=memops"), std::string::npos) << s.message();
}

}  // namespace
