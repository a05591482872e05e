// The cost model interface the tuner talks to, and a random model to compare
// learned models against.
//
// A model scores candidates from their feature vectors (features.h): a
// higher score means a faster program. It learns from measured candidates
// whose throughput is normalized per workload (best_cost / cost, so the best
// candidate of a workload scores 1 and a failed one 0). Models are not
// thread-safe: one tuner thread owns one model.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "base/status.h"

namespace tessera::costmodel {

/// A learned (or not) predictor of relative program speed.
class CostModel {
 public:
  virtual ~CostModel() = default;

  /// Adds measured samples (features[i] scored throughputs[i] in [0, 1],
  /// 0 for errors) to what the model has seen and retrains. All samples are
  /// taken to belong to one workload. kInvalidArgument on mismatched sizes,
  /// feature vectors of differing length, or non-finite values; the model is
  /// unchanged then.
  virtual Status update(const std::vector<std::vector<float>>& features, const std::vector<double>& throughputs) = 0;

  /// update() with the workload (group) of each sample, for models that rank
  /// within a workload. The default ignores the groups.
  virtual Status update_with_groups(const std::vector<std::vector<float>>& features,
                                    const std::vector<double>& throughputs, const std::vector<int64_t>& groups);

  /// One score per feature vector; higher is faster. Scores are comparable
  /// only between candidates of one workload.
  virtual Result<std::vector<double>> predict(const std::vector<std::vector<float>>& features) = 0;

  /// "xgb-rank", "random", ... for logs.
  virtual std::string name() const = 0;

  /// True when predict() can score (a learned model: once trained, pre-trained
  /// or loaded). A search may then rank its very first batch.
  virtual bool ready() const = 0;
};

/// Checks a training batch: equal sizes (groups may be empty), feature
/// vectors all of length `num_features` (or of one common length when it is
/// 0), finite features and finite non-negative throughputs. `where` prefixes
/// the message.
Status check_batch(const std::vector<std::vector<float>>& features, const std::vector<double>& throughputs,
                   const std::vector<int64_t>* groups, size_t num_features, const std::string& where);

/// Checks feature vectors to predict on: all of one length (`num_features`
/// when it is not 0) and finite.
Status check_features(const std::vector<std::vector<float>>& features, size_t num_features, const std::string& where);

/// Scores uniformly at random in [0, 1), from its own generator: the same
/// seed and the same calls give the same scores. Learns nothing.
class RandomModel final : public CostModel {
 public:
  /// A model whose generator starts from `seed`.
  explicit RandomModel(uint64_t seed) : rng_(seed) {}

  /// Validates the batch, then ignores it.
  Status update(const std::vector<std::vector<float>>& features, const std::vector<double>& throughputs) override;
  /// Random scores; kInvalidArgument for vectors of differing length or non-finite values.
  Result<std::vector<double>> predict(const std::vector<std::vector<float>>& features) override;
  /// "random".
  std::string name() const override { return "random"; }
  /// Always.
  bool ready() const override { return true; }

 private:
  std::mt19937_64 rng_;
};

}  // namespace tessera::costmodel
