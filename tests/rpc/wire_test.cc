// Validation of wire messages: every field a peer could get wrong is refused
// with a message, before anyone acts on it.
#include "rpc/sandbox.h"
#include "rpc/wire.h"

#include <cmath>
#include <functional>

#include "tests/rpc/test_util.h"

namespace tessera::rpc {
namespace {

using namespace testing;  // NOLINT

pb::Job valid_job() {
  MeasureInput in = kernel_input("add_one");
  in.reference = add_one_reference();
  pb::Job job = to_wire_job(in);
  job.set_job_id(1);
  job.set_session_id("s-1");
  job.set_device_key("x86");
  return job;
}

TEST(Wire, ValidJobPasses) { EXPECT_TRUE(validate_job(valid_job(), WireLimits()).is_ok()); }

TEST(Wire, EveryBadFieldIsRefused) {
  const WireLimits limits;
  std::vector<std::pair<std::string, std::function<void(pb::Job&)>>> cases = {
      {"session", [](pb::Job& j) { j.set_session_id(""); }},
      {"key", [](pb::Job& j) { j.set_device_key("bad key with spaces"); }},
      {"symbol", [](pb::Job& j) { j.set_symbol("x; rm -rf /"); }},
      {"library", [](pb::Job& j) { j.clear_library(); }},
      {"args", [](pb::Job& j) { j.clear_args(); }},
      {"dtype", [](pb::Job& j) { j.mutable_args(0)->set_dtype("float7"); }},
      {"extent", [](pb::Job& j) { j.mutable_args(0)->set_shape(0, -1); }},
      {"overflow", [](pb::Job& j) { for (int i = 0; i < 4; ++i) j.mutable_args(0)->add_shape(1LL << 20); }},
      {"number", [](pb::Job& j) { j.mutable_timing()->set_number(0); }},
      {"repeat", [](pb::Job& j) { j.mutable_timing()->set_repeat(-3); }},
      {"min_repeat_ms", [](pb::Job& j) { j.mutable_timing()->set_min_repeat_ms(std::nan("")); }},
      {"timeout", [](pb::Job& j) { j.set_timeout_ms(0); }},
      {"reference size", [](pb::Job& j) { j.mutable_reference()->set_expected_output("abc"); }},
      {"tolerance", [](pb::Job& j) { j.mutable_reference()->set_tolerance(-1); }},
      {"cold output", [](pb::Job& j) { j.mutable_args(j.args_size() - 1)->set_cold(true); }},
  };
  for (auto& [name, mutate] : cases) {
    pb::Job job = valid_job();
    mutate(job);
    Status s = validate_job(job, limits);
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << name;
  }
  WireLimits small;
  small.max_library_bytes = 16;
  EXPECT_NE(validate_job(valid_job(), small).message().find("exceeds the limit"), std::string::npos);
}

TEST(Wire, EnvelopeOfAnotherVersionIsRejected) {
  pb::Envelope env;
  env.mutable_status_request();
  env.set_protocol_version(kProtocolVersion);
  pb::Envelope out;
  EXPECT_TRUE(parse_envelope(env.SerializeAsString(), &out));
  env.set_protocol_version(kProtocolVersion + 1);
  EXPECT_FALSE(parse_envelope(env.SerializeAsString(), &out));
  EXPECT_FALSE(parse_envelope("\xff\xff\xff", &out));
  EXPECT_FALSE(parse_envelope("", &out));
}

TEST(Sandbox, InProcessMeasurementChecksTheReference) {
  MeasureInput in = kernel_input("add_one");
  in.reference = add_one_reference();
  pb::Job job = to_wire_job(in);
  job.set_session_id("s");
  SandboxOptions options;
  pb::Result r = measure_in_process(job, options);
  EXPECT_EQ(r.error(), pb::OK) << r.message();
  EXPECT_EQ(r.costs_s_size(), 2);
  in.reference = add_one_reference(43);  // another seed: another answer
  r = measure_in_process(to_wire_job(in), options);
  EXPECT_EQ(r.error(), pb::WRONG_ANSWER);
  EXPECT_NE(r.message().find("differ from the reference"), std::string::npos) << r.message();
}

TEST(Sandbox, AColdInputIsCheckedAndTimedLikeAnyOther) {
  // The worker times the kernel on copies of the cold input; the reference
  // check still sees the input the seed made.
  MeasureInput in = kernel_input("add_one");
  in.args[0].cold = true;
  in.reference = add_one_reference();
  pb::Job job = to_wire_job(in);
  job.set_session_id("s");
  ASSERT_TRUE(job.args(0).cold());
  EXPECT_FALSE(job.args(1).cold());
  pb::Result r = measure_in_process(job, SandboxOptions());
  EXPECT_EQ(r.error(), pb::OK) << r.message();
  EXPECT_EQ(r.costs_s_size(), 2);
}

}  // namespace
}  // namespace tessera::rpc
