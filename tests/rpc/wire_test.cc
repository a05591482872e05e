// Validation of wire messages: every field a peer could get wrong is refused
// with a message, before anyone acts on it.
#include "rpc/wire.h"

#include <cmath>
#include <functional>

#include "rpc/sandbox.h"
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

// add_one's expected values at `points` only, on the wire.
pb::ReferenceCheck sampled_reference(const std::vector<int64_t>& points, uint64_t seed = 42) {
  const ReferenceCheck whole = add_one_reference(seed);
  pb::ReferenceCheck ref;
  std::string values;
  for (int64_t p : points) {
    ref.add_points(static_cast<uint64_t>(p));
    if (p >= 0 && p < 256)
      values.append(whole.expected_output.substr(static_cast<size_t>(p) * 4, 4));
    else
      values.append(4, '\0');
  }
  ref.set_expected_output(values);
  ref.set_tolerance(whole.tolerance);
  return ref;
}

TEST(Wire, ValidJobPasses) {
  EXPECT_TRUE(validate_job(valid_job(), WireLimits()).is_ok());
}

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
      {"overflow",
       [](pb::Job& j) {
         for (int i = 0; i < 4; ++i) j.mutable_args(0)->add_shape(1LL << 20);
       }},
      {"number", [](pb::Job& j) { j.mutable_timing()->set_number(0); }},
      {"repeat", [](pb::Job& j) { j.mutable_timing()->set_repeat(-3); }},
      {"min_repeat_ms", [](pb::Job& j) { j.mutable_timing()->set_min_repeat_ms(std::nan("")); }},
      {"stop_above_s", [](pb::Job& j) { j.mutable_timing()->set_stop_above_s(-1); }},
      {"timeout", [](pb::Job& j) { j.set_timeout_ms(0); }},
      {"reference size", [](pb::Job& j) { j.mutable_reference()->set_expected_output("abc"); }},
      {"tolerance", [](pb::Job& j) { j.mutable_reference()->set_tolerance(-1); }},
      {"cold output", [](pb::Job& j) { j.mutable_args(j.args_size() - 1)->set_cold(true); }},
      {"point outside",
       [](pb::Job& j) {
         *j.mutable_reference() = sampled_reference({0, 256});
       }},
      {"points size",
       [](pb::Job& j) {
         *j.mutable_reference() = sampled_reference({0, 7});
         j.mutable_reference()->add_points(9);  // three points, two values
       }},
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

TEST(Wire, SampledReferenceTravelsAsPointsAndOneValueEach) {
  MeasureInput in = kernel_input("add_one");
  in.reference = add_one_reference();
  in.reference->points = {0, 17, 255};
  std::string values;
  for (int64_t p : in.reference->points) values += in.reference->expected_output.substr(static_cast<size_t>(p) * 4, 4);
  in.reference->expected_output = values;
  pb::Job job = to_wire_job(in);
  job.set_job_id(1);
  job.set_session_id("s-1");
  job.set_device_key("x86");
  ASSERT_EQ(job.reference().points_size(), 3);
  EXPECT_EQ(job.reference().points(2), 255u);
  EXPECT_EQ(job.reference().expected_output().size(), 12u);
  EXPECT_TRUE(validate_job(job, WireLimits()).is_ok()) << validate_job(job, WireLimits()).to_string();
  WireLimits few;
  few.max_reference_points = 2;
  EXPECT_NE(validate_job(job, few).message().find("more than 2 points"), std::string::npos);
}

// A frame from before sampled checks (no points) still compares the whole
// output; one with points compares exactly those, wherever the bug is.
TEST(Sandbox, SampledCheckComparesExactlyTheGivenPoints) {
  MeasureInput in = kernel_input("add_one");
  pb::Job job = to_wire_job(in);
  job.set_session_id("s");
  *job.mutable_reference() = sampled_reference({0, 1, 128, 255});
  pb::Result r = measure_in_process(job, SandboxOptions());
  EXPECT_EQ(r.error(), pb::OK) << r.message();
  EXPECT_GT(r.check_seconds(), 0);  // the check's kernel call and comparison, reported apart
  EXPECT_EQ(from_wire_result(r).check_seconds, r.check_seconds());
  // Values of another seed at the same points: every one of them is wrong.
  *job.mutable_reference() = sampled_reference({0, 1, 128, 255}, 43);
  r = measure_in_process(job, SandboxOptions());
  EXPECT_EQ(r.error(), pb::WRONG_ANSWER);
  EXPECT_NE(r.message().find("4 of 4 sampled output elements differ"), std::string::npos) << r.message();
  // One wrong value, at the last point: reported there.
  pb::ReferenceCheck one_wrong = sampled_reference({0, 1, 128, 255});
  std::string values = one_wrong.expected_output();
  values.replace(12, 4, sampled_reference({255}, 43).expected_output());
  one_wrong.set_expected_output(values);
  *job.mutable_reference() = one_wrong;
  r = measure_in_process(job, SandboxOptions());
  EXPECT_EQ(r.error(), pb::WRONG_ANSWER);
  EXPECT_NE(r.message().find("1 of 4 sampled output elements differ from the reference (first at 255"),
            std::string::npos)
      << r.message();
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
