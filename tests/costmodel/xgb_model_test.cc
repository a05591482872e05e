#include "costmodel/xgb_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "costmodel/features.h"
#include "costmodel/metrics.h"
#include "tests/costmodel/random_schedules.h"

namespace tessera::costmodel {
namespace {

// Random valid schedules of a small matmul, their features, and a known
// score that is an analytic function of three features: vector lanes (more
// is better), the innermost stride of the largest input (smaller is better)
// and the parallel extent (more is better).
struct Synthetic {
  std::vector<std::vector<float>> features;
  std::vector<double> truth;   // the analytic score
  std::vector<double> labels;  // truth normalized to [0, 1]
};

const Synthetic& synthetic() {
  static const Synthetic data = [] {
    Synthetic d;
    auto dag = testing::matmul_dag(64, 64, 64);
    std::mt19937_64 rng(2024);
    const int lanes = feature_index("store.vec_lanes");
    const int stride = feature_index("buf1.stride");
    const int par = feature_index("store.par_prod");
    while (d.features.size() < 600) {
      auto s = testing::random_schedule(dag, rng);
      if (!s.is_ok()) continue;
      auto f = extract_features(*s);
      if (!f.is_ok()) continue;
      const std::vector<float>& v = *f;
      d.truth.push_back(1.0 * v[lanes] - 0.5 * std::fabs(v[stride]) + 0.7 * v[par]);
      d.features.push_back(v);
    }
    const auto [lo, hi] = std::minmax_element(d.truth.begin(), d.truth.end());
    for (double t : d.truth) d.labels.push_back((t - *lo) / (*hi - *lo));
    return d;
  }();
  return data;
}

template <typename T>
std::vector<T> slice(const std::vector<T>& v, size_t begin, size_t end) {
  return std::vector<T>(v.begin() + static_cast<std::ptrdiff_t>(begin), v.begin() + static_cast<std::ptrdiff_t>(end));
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/costmodel_" + std::to_string(::getpid()) + "_" + name;
}

double held_out_spearman(XGBObjective objective) {
  const Synthetic& d = synthetic();
  XGBModel model(XGBOptions{.objective = objective});
  EXPECT_TRUE(model.update(slice(d.features, 0, 500), slice(d.labels, 0, 500)).is_ok());
  auto predicted = model.predict(slice(d.features, 500, 600));
  EXPECT_TRUE(predicted.is_ok()) << predicted.status().to_string();
  return predicted.is_ok() ? spearman(*predicted, slice(d.truth, 500, 600)) : 0;
}

TEST(XGBModel, RegressionLearnsASyntheticGroundTruth) {
  const double rho = held_out_spearman(XGBObjective::kRegression);
  std::printf("held-out Spearman (reg:squarederror): %.3f\n", rho);
  EXPECT_GE(rho, 0.9);
}

TEST(XGBModel, PairwiseRankingLearnsASyntheticGroundTruth) {
  const double rho = held_out_spearman(XGBObjective::kRankPairwise);
  std::printf("held-out Spearman (rank:pairwise): %.3f\n", rho);
  EXPECT_GE(rho, 0.9);
}

TEST(XGBModel, PredictBeforeTrainingIsAnError) {
  XGBModel model;
  EXPECT_FALSE(model.trained());
  auto p = model.predict({{1.f, 2.f}});
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("not trained"), std::string::npos) << p.status().message();
}

TEST(XGBModel, BadBatchLeavesTheModelUnchanged) {
  const Synthetic& d = synthetic();
  XGBModel model(XGBOptions{.num_rounds = 10});
  ASSERT_TRUE(model.update(slice(d.features, 0, 50), slice(d.labels, 0, 50)).is_ok());
  EXPECT_EQ(model.update(slice(d.features, 0, 3), {0.5, 1.0}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(model.update({{1.f, 2.f}}, {0.5}).code(), ErrorCode::kInvalidArgument);  // wrong width
  EXPECT_EQ(model.num_samples(), 50u);
  auto p = model.predict({{1.f, 2.f}});
  EXPECT_EQ(p.status().code(), ErrorCode::kInvalidArgument);
}

TEST(XGBModel, TrainingIsDeterministic) {
  const Synthetic& d = synthetic();
  XGBModel a(XGBOptions{.num_rounds = 20}), b(XGBOptions{.num_rounds = 20});
  ASSERT_TRUE(a.update(slice(d.features, 0, 200), slice(d.labels, 0, 200)).is_ok());
  ASSERT_TRUE(b.update(slice(d.features, 0, 200), slice(d.labels, 0, 200)).is_ok());
  EXPECT_EQ(a.predict(slice(d.features, 200, 300)).value(), b.predict(slice(d.features, 200, 300)).value());
}

TEST(XGBModel, SaveAndLoadPredictTheSame) {
  const Synthetic& d = synthetic();
  XGBModel model(XGBOptions{.num_rounds = 30});
  ASSERT_TRUE(model.update(slice(d.features, 0, 300), slice(d.labels, 0, 300)).is_ok());
  const std::string path = temp_path("model.json");
  ASSERT_TRUE(model.save(path).is_ok());
  XGBModel loaded;
  Status st = loaded.load(path);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(loaded.num_features(), static_cast<size_t>(kFeatureCount));
  EXPECT_EQ(model.predict(slice(d.features, 300, 400)).value(), loaded.predict(slice(d.features, 300, 400)).value());
  std::remove(path.c_str());
}

TEST(XGBModel, FileErrorsAreValues) {
  XGBModel model;
  EXPECT_EQ(model.save(temp_path("untrained.json")).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(model.load(temp_path("missing.json")).code(), ErrorCode::kNotFound);
  const std::string garbage = temp_path("garbage.json");
  std::ofstream(garbage) << "{ this is not a model";
  Status st = model.load(garbage);
  EXPECT_EQ(st.code(), ErrorCode::kParseError) << st.to_string();
  EXPECT_FALSE(model.trained());
  std::remove(garbage.c_str());
  const Synthetic& d = synthetic();
  XGBModel trained(XGBOptions{.num_rounds = 5});
  ASSERT_TRUE(trained.update(slice(d.features, 0, 20), slice(d.labels, 0, 20)).is_ok());
  EXPECT_EQ(trained.save("/nonexistent-dir/model.json").code(), ErrorCode::kIOError);
}

TEST(XGBModel, RanksWithinGroups) {
  // Two workloads whose scores live on different scales: ranking within each
  // group must still come out right.
  const Synthetic& d = synthetic();
  std::vector<std::vector<float>> x = slice(d.features, 0, 400);
  std::vector<double> y = slice(d.labels, 0, 400);
  std::vector<int64_t> groups(400);
  for (size_t i = 0; i < 400; ++i) {
    groups[i] = static_cast<int64_t>(i % 2);
    if (i % 2) y[i] *= 0.1;  // the second workload's throughputs are all lower
  }
  XGBModel model;
  ASSERT_TRUE(model.update_with_groups(x, y, groups).is_ok());
  auto p = model.predict(slice(d.features, 400, 600));
  ASSERT_TRUE(p.is_ok());
  EXPECT_GE(pairwise_accuracy(*p, slice(d.truth, 400, 600)), 0.85);
  EXPECT_EQ(model.update_with_groups(x, y, {1, 2}).code(), ErrorCode::kInvalidArgument);
}

TEST(XGBModel, PretrainingGivesAWarmStart) {
  const Synthetic& d = synthetic();
  std::vector<TrainingRecord> records;
  for (size_t i = 0; i < 300; ++i) records.push_back({d.features[i], d.labels[i], 7});
  XGBModel model;
  ASSERT_TRUE(model.pretrain(records).is_ok());
  ASSERT_TRUE(model.trained());
  auto p = model.predict(slice(d.features, 500, 600));
  ASSERT_TRUE(p.is_ok());
  EXPECT_GE(spearman(*p, slice(d.truth, 500, 600)), 0.8);
  // The records stay in the training set of later updates.
  ASSERT_TRUE(model.update(slice(d.features, 300, 310), slice(d.labels, 300, 310)).is_ok());
  EXPECT_EQ(model.num_samples(), 310u);

  XGBModel forgetful(XGBOptions{.keep_pretrain_data = false});
  ASSERT_TRUE(forgetful.pretrain(records).is_ok());
  EXPECT_EQ(forgetful.num_samples(), 0u);
  EXPECT_TRUE(forgetful.trained());
}

// Batches of 50 as a tuning run gives them: most updates continue boosting,
// a few retrain from scratch; the model must learn as well as one trained
// at once.
double spearman_after_batches(XGBOptions options) {
  const Synthetic& d = synthetic();
  XGBModel model(options);
  for (size_t b = 0; b < 500; b += 50)
    EXPECT_TRUE(model.update(slice(d.features, b, b + 50), slice(d.labels, b, b + 50)).is_ok());
  auto p = model.predict(slice(d.features, 500, 600));
  EXPECT_TRUE(p.is_ok());
  return p.is_ok() ? spearman(*p, slice(d.truth, 500, 600)) : 0;
}

TEST(XGBModel, ContinuedBoostingBetweenRetrainingsLearnsAsWell) {
  const double incremental = spearman_after_batches({});
  const double from_scratch = spearman_after_batches({.incremental_rounds = 0});
  std::printf("held-out Spearman after 10 batches: continued %.3f, retrained each time %.3f\n", incremental,
              from_scratch);
  EXPECT_GE(incremental, 0.9);
  EXPECT_GE(incremental, from_scratch - 0.03);
}

TEST(XGBModel, IsReadyOnceTrainedOrPretrained) {
  const Synthetic& d = synthetic();
  XGBModel model;
  EXPECT_FALSE(model.ready());
  ASSERT_TRUE(model.update(slice(d.features, 0, 20), slice(d.labels, 0, 20)).is_ok());
  EXPECT_TRUE(model.ready());
  XGBModel warm;
  ASSERT_TRUE(warm.pretrain({{d.features[0], 1.0, 3}, {d.features[1], 0.5, 3}}).is_ok());
  EXPECT_TRUE(warm.ready());
}

}  // namespace
}  // namespace tessera::costmodel
