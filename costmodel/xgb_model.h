// A gradient-boosted tree cost model on XGBoost's C API (libxgboost-dev).
//
// The model keeps every sample it has been given. An update() retrains from
// scratch on all of them when the samples have doubled since the last full
// training (so a fresh model never carries the bias of an early, small batch
// for long), and otherwise continues boosting with a few more trees fitted
// to all samples: a tuning run then spends O(n log n) instead of O(n^2) on
// training (XGBOptions::incremental_rounds = 0 retrains at every update, as
// AutoTVM does). Two objectives:
//  - kRankPairwise ("rank:pairwise"): learns to order candidates within a
//    workload (group); scores are comparable only within one workload.
//  - kRegression ("reg:squarederror"): fits the normalized throughput.
// With nthread = 1 (the default) training is deterministic: the same samples
// in the same order give the same model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "costmodel/cost_model.h"

namespace tessera::costmodel {

/// What the trees learn.
enum class XGBObjective : uint8_t { kRankPairwise, kRegression };
/// "rank:pairwise" or "reg:squarederror".
const char* xgb_objective_name(XGBObjective objective);

/// Training parameters.
struct XGBOptions {
  XGBObjective objective = XGBObjective::kRankPairwise;
  int num_rounds = 100;  ///< boosting rounds per (re)training
  int max_depth = 6;
  double eta = 0.25;  ///< learning rate
  double min_child_weight = 1.0;
  /// rank:pairwise: pairs sampled per sample and round. More pairs ranked
  /// held-out measurements clearly better (0.825 -> 0.85 pairwise accuracy
  /// going from XGBoost's default 1 to 16) at little training cost.
  int num_pair_samples = 16;
  double subsample = 1.0;         ///< share of rows each tree sees
  double colsample_bytree = 1.0;  ///< share of features each tree sees
  /// Histogram bins per feature (tree_method "hist"). Split search costs
  /// bins x features x nodes per tree whatever the sample count, so with the
  /// few hundred samples of a tuning run XGBoost's default 256 mostly costs
  /// time.
  int max_bin = 64;
  /// Between full retrainings, update() continues boosting: it adds this
  /// many trees fitted to all samples (the residuals of the current model)
  /// instead of retraining from scratch. A full retraining happens when the
  /// samples given by update() have grown by `retrain_growth` (1.0:
  /// doubled) since the last one, and at the first update after pretrain(). 0: every update retrains from scratch
  /// (AutoTVM's way; a tuning run's retrainings then cost O(n^2) rounds x rows).
  int incremental_rounds = 10;
  double retrain_growth = 1.0;
  int nthread = 1;  ///< > 1 is faster but may not be deterministic
  uint64_t seed = 0;
  /// Keep pretrain() records in the training set of later updates; groups
  /// keep them apart from the new workload's samples when ranking.
  bool keep_pretrain_data = true;
};

/// One measured candidate for pre-training: its features, its normalized
/// throughput (best_cost / cost within its workload; 0 for an error) and its
/// workload (any id; samples with equal ids are ranked against each other).
struct TrainingRecord {
  std::vector<float> features;
  double throughput = 0;
  int64_t group = 0;
};

/// XGBoost behind the CostModel interface. Move-only; owns its booster.
class XGBModel final : public CostModel {
 public:
  explicit XGBModel(XGBOptions options = {});
  ~XGBModel() override;
  XGBModel(XGBModel&& other) noexcept;
  XGBModel& operator=(XGBModel&& other) noexcept;
  XGBModel(const XGBModel&) = delete;
  XGBModel& operator=(const XGBModel&) = delete;

  /// Adds the samples (one workload, group 0) and trains on everything:
  /// from scratch or a few more rounds (see XGBOptions::incremental_rounds).
  Status update(const std::vector<std::vector<float>>& features, const std::vector<double>& throughputs) override;
  /// update() with the samples' workloads.
  Status update_with_groups(const std::vector<std::vector<float>>& features, const std::vector<double>& throughputs,
                            const std::vector<int64_t>& groups) override;
  /// Scores from the last trained (or loaded) model. kInvalidArgument before
  /// any training ("not trained": call update, pretrain or load first) and
  /// for vectors whose length differs from the training data's.
  Result<std::vector<double>> predict(const std::vector<std::vector<float>>& features) override;
  /// "xgb-rank" or "xgb-reg".
  std::string name() const override;

  /// Trains on records from earlier tuning (other workloads, other
  /// targets) for a warm start; they stay in the training set when
  /// options.keep_pretrain_data.
  Status pretrain(const std::vector<TrainingRecord>& records);

  /// Writes the trained model (XGBoost JSON) to `path`. kInvalidArgument when
  /// not trained, kIOError when the file cannot be written.
  Status save(const std::string& path) const;
  /// Replaces the model with the one in `path`; predictions then match the
  /// saved model's. Samples seen so far are kept (a later update retrains on
  /// them, replacing the loaded trees). kNotFound / kIOError for the file,
  /// kParseError when XGBoost rejects its contents.
  Status load(const std::string& path);

  /// True once a model can predict.
  bool trained() const { return booster_ != nullptr; }
  bool ready() const override { return trained(); }
  /// Samples in the training set (pre-training records included).
  size_t num_samples() const { return labels_.size(); }
  /// Length of the feature vectors the model takes (0 before any data).
  size_t num_features() const { return num_features_; }
  /// The training parameters the model was made with.
  const XGBOptions& options() const { return options_; }

 private:
  Status add(const std::vector<std::vector<float>>& features, const std::vector<double>& throughputs,
             const std::vector<int64_t>* groups, const std::string& where);
  /// Trains from scratch (`continue_rounds` = 0) or adds that many rounds to
  /// the current booster, on every sample.
  Status train(int continue_rounds);
  void free_booster();

  XGBOptions options_;
  void* booster_ = nullptr;  // BoosterHandle; null until trained or loaded
  size_t num_features_ = 0;
  std::vector<float> data_;  // row-major, num_samples x num_features_
  std::vector<float> labels_;
  std::vector<int64_t> groups_;
  size_t own_samples_ = 0;  // samples given by update() (not pretrain)
  size_t own_at_full_ = 0;  // own_samples_ at the last training from scratch; 0: retrain at the next update
  bool pretraining_ = false;
  int boosted_rounds_ = 0;  // rounds in the current booster
};

}  // namespace tessera::costmodel
