#include "costmodel/cost_model.h"

#include <cmath>

namespace tessera::costmodel {

Status CostModel::update_with_groups(const std::vector<std::vector<float>>& features,
                                     const std::vector<double>& throughputs, const std::vector<int64_t>& groups) {
  if (groups.size() != features.size()) {
    return Status(ErrorCode::kInvalidArgument, name() + " update: " + std::to_string(features.size()) +
                                                   " feature vectors but " + std::to_string(groups.size()) +
                                                   " group ids");
  }
  return update(features, throughputs);
}

Status check_features(const std::vector<std::vector<float>>& features, size_t num_features, const std::string& where) {
  if (features.empty()) return Status::ok();
  const size_t expected = num_features != 0 ? num_features : features.front().size();
  if (expected == 0) return Status(ErrorCode::kInvalidArgument, where + ": empty feature vector");
  for (size_t i = 0; i < features.size(); ++i) {
    if (features[i].size() != expected) {
      return Status(ErrorCode::kInvalidArgument, where + ": feature vector " + std::to_string(i) + " has " +
                                                     std::to_string(features[i].size()) + " entries, expected " +
                                                     std::to_string(expected));
    }
    for (size_t j = 0; j < expected; ++j) {
      if (!std::isfinite(features[i][j])) {
        return Status(ErrorCode::kInvalidArgument,
                      where + ": feature " + std::to_string(j) + " of vector " + std::to_string(i) + " is not finite");
      }
    }
  }
  return Status::ok();
}

Status check_batch(const std::vector<std::vector<float>>& features, const std::vector<double>& throughputs,
                   const std::vector<int64_t>* groups, size_t num_features, const std::string& where) {
  if (features.size() != throughputs.size()) {
    return Status(ErrorCode::kInvalidArgument, where + ": " + std::to_string(features.size()) +
                                                   " feature vectors but " + std::to_string(throughputs.size()) +
                                                   " throughputs");
  }
  if (groups && !groups->empty() && groups->size() != features.size()) {
    return Status(ErrorCode::kInvalidArgument, where + ": " + std::to_string(features.size()) +
                                                   " feature vectors but " + std::to_string(groups->size()) +
                                                   " group ids");
  }
  for (size_t i = 0; i < throughputs.size(); ++i) {
    if (!std::isfinite(throughputs[i]) || throughputs[i] < 0) {
      return Status(ErrorCode::kInvalidArgument, where + ": throughput " + std::to_string(i) + " is " +
                                                     std::to_string(throughputs[i]) +
                                                     "; expected a normalized value >= 0");
    }
  }
  return check_features(features, num_features, where);
}

Status RandomModel::update(const std::vector<std::vector<float>>& features, const std::vector<double>& throughputs) {
  return check_batch(features, throughputs, nullptr, 0, "random model update");
}

Result<std::vector<double>> RandomModel::predict(const std::vector<std::vector<float>>& features) {
  TESSERA_RETURN_IF_ERROR(check_features(features, 0, "random model predict"));
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> scores(features.size());
  for (double& s : scores) s = uniform(rng_);
  return scores;
}

}  // namespace tessera::costmodel
