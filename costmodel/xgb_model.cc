#include "costmodel/xgb_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>
#include <utility>

namespace tessera::costmodel {
namespace {

// Every XGBoost call returns 0 or -1 with a thread-local message; turn the
// latter into a Status that names the call.
Status xgb_status(int rc, const char* call, ErrorCode code = ErrorCode::kInternal) {
  if (rc == 0) return Status::ok();
  const char* msg = XGBGetLastError();
  return Status(code, std::string("xgboost ") + call + ": " + (msg && *msg ? msg : "unknown error"));
}

#define TESSERA_XGB(call) TESSERA_RETURN_IF_ERROR(xgb_status((call), #call))

class DMatrix {
 public:
  DMatrix() = default;
  ~DMatrix() {
    if (handle_) XGDMatrixFree(handle_);
  }
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
  DMatrixHandle* out() { return &handle_; }
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

class Booster {
 public:
  Booster() = default;
  ~Booster() {
    if (handle_) XGBoosterFree(handle_);
  }
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;
  BoosterHandle* out() { return &handle_; }
  BoosterHandle get() const { return handle_; }
  BoosterHandle release() { return std::exchange(handle_, nullptr); }

 private:
  BoosterHandle handle_ = nullptr;
};

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

Status set_params(BoosterHandle b, const XGBOptions& o) {
  const std::pair<const char*, std::string> params[] = {
      {"objective", xgb_objective_name(o.objective)},
      {"max_depth", std::to_string(o.max_depth)},
      {"eta", number(o.eta)},
      {"min_child_weight", number(o.min_child_weight)},
      {"subsample", number(o.subsample)},
      {"colsample_bytree", number(o.colsample_bytree)},
      {"num_pairsample", std::to_string(std::max(1, o.num_pair_samples))},
      {"nthread", std::to_string(std::max(1, o.nthread))},
      {"seed", std::to_string(o.seed)},
      {"tree_method", "hist"},
      {"max_bin", std::to_string(std::max(2, o.max_bin))},
      {"verbosity", "0"},
  };
  for (const auto& [key, value] : params) {
    if (std::string(key) == "num_pairsample" && o.objective != XGBObjective::kRankPairwise) continue;
    TESSERA_RETURN_IF_ERROR(xgb_status(XGBoosterSetParam(b, key, value.c_str()), "XGBoosterSetParam")
                                .with_context(std::string("parameter ") + key + "=" + value));
  }
  return Status::ok();
}

}  // namespace

const char* xgb_objective_name(XGBObjective objective) {
  return objective == XGBObjective::kRankPairwise ? "rank:pairwise" : "reg:squarederror";
}

XGBModel::XGBModel(XGBOptions options) : options_(std::move(options)) {}

XGBModel::~XGBModel() {
  free_booster();
}

XGBModel::XGBModel(XGBModel&& other) noexcept
    : options_(std::move(other.options_)),
      booster_(std::exchange(other.booster_, nullptr)),
      num_features_(other.num_features_),
      data_(std::move(other.data_)),
      labels_(std::move(other.labels_)),
      groups_(std::move(other.groups_)),
      own_samples_(other.own_samples_),
      own_at_full_(other.own_at_full_),
      boosted_rounds_(other.boosted_rounds_) {}

XGBModel& XGBModel::operator=(XGBModel&& other) noexcept {
  if (this != &other) {
    free_booster();
    options_ = std::move(other.options_);
    booster_ = std::exchange(other.booster_, nullptr);
    num_features_ = other.num_features_;
    data_ = std::move(other.data_);
    labels_ = std::move(other.labels_);
    groups_ = std::move(other.groups_);
    own_samples_ = other.own_samples_;
    own_at_full_ = other.own_at_full_;
    boosted_rounds_ = other.boosted_rounds_;
  }
  return *this;
}

void XGBModel::free_booster() {
  if (booster_) XGBoosterFree(static_cast<BoosterHandle>(booster_));
  booster_ = nullptr;
}

std::string XGBModel::name() const {
  return options_.objective == XGBObjective::kRankPairwise ? "xgb-rank" : "xgb-reg";
}

Status XGBModel::add(const std::vector<std::vector<float>>& features, const std::vector<double>& throughputs,
                     const std::vector<int64_t>* groups, const std::string& where) {
  TESSERA_RETURN_IF_ERROR(check_batch(features, throughputs, groups, num_features_, where));
  if (features.empty()) return Status::ok();
  num_features_ = features.front().size();
  for (size_t i = 0; i < features.size(); ++i) {
    data_.insert(data_.end(), features[i].begin(), features[i].end());
    labels_.push_back(static_cast<float>(throughputs[i]));
    groups_.push_back(groups && !groups->empty() ? (*groups)[i] : 0);
  }
  return Status::ok();
}

Status XGBModel::update(const std::vector<std::vector<float>>& features, const std::vector<double>& throughputs) {
  return update_with_groups(features, throughputs, {});
}

Status XGBModel::update_with_groups(const std::vector<std::vector<float>>& features,
                                    const std::vector<double>& throughputs, const std::vector<int64_t>& groups) {
  const size_t before = labels_.size();
  TESSERA_RETURN_IF_ERROR(add(features, throughputs, &groups, name() + " update"));
  if (labels_.size() == before) return Status::ok();
  // Pre-training records do not count towards the doubling: after a warm
  // start the first update retrains on records and samples together, and
  // the next ones when the run's own samples have doubled.
  const size_t own = own_samples_ + (pretraining_ ? 0 : labels_.size() - before);
  const bool full = pretraining_ || !booster_ || options_.incremental_rounds <= 0 || own_at_full_ == 0 ||
                    static_cast<double>(own) >= static_cast<double>(own_at_full_) * (1.0 + options_.retrain_growth);
  Status st = train(full ? 0 : options_.incremental_rounds);
  if (st.is_ok()) {
    own_samples_ = own;
    if (full && !pretraining_) own_at_full_ = own;
  } else {
    // Leave the training set as it was, so that a failed update changes nothing.
    labels_.resize(before);
    groups_.resize(before);
    data_.resize(before * num_features_);
    if (before == 0) num_features_ = 0;
  }
  return st;
}

Status XGBModel::pretrain(const std::vector<TrainingRecord>& records) {
  std::vector<std::vector<float>> features;
  std::vector<double> throughputs;
  std::vector<int64_t> groups;
  features.reserve(records.size());
  for (const TrainingRecord& r : records) {
    features.push_back(r.features);
    throughputs.push_back(r.throughput);
    groups.push_back(r.group);
  }
  const size_t before = labels_.size();
  pretraining_ = true;
  Status st = update_with_groups(features, throughputs, groups).with_context("pretrain");
  pretraining_ = false;
  TESSERA_RETURN_IF_ERROR(st);
  // With the records kept, the next update retrains on them and its samples.
  own_at_full_ = 0;
  if (!options_.keep_pretrain_data) {
    // The trees stay; the records leave the training set of later updates,
    // which continue boosting them until the run's own samples number half
    // the records, and then retrain on the run's samples alone.
    data_.erase(data_.begin() + static_cast<std::ptrdiff_t>(before * num_features_), data_.end());
    labels_.resize(before);
    groups_.resize(before);
    own_at_full_ = std::max<size_t>(1, records.size() / 2);
    own_samples_ = 0;
  }
  return Status::ok();
}

Status XGBModel::train(int continue_rounds) {
  const size_t n = labels_.size();
  const size_t nf = num_features_;
  // Ranking needs each group's rows together: order rows by group, stably.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  const bool rank = options_.objective == XGBObjective::kRankPairwise;
  std::vector<unsigned> group_sizes;
  std::vector<float> sorted_data, sorted_labels;
  const float* data = data_.data();
  const float* labels = labels_.data();
  if (rank) {
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return groups_[a] < groups_[b]; });
    sorted_data.resize(n * nf);
    sorted_labels.resize(n);
    for (size_t i = 0; i < n; ++i) {
      std::copy_n(data_.begin() + static_cast<std::ptrdiff_t>(order[i] * nf), nf,
                  sorted_data.begin() + static_cast<std::ptrdiff_t>(i * nf));
      sorted_labels[i] = labels_[order[i]];
      if (i == 0 || groups_[order[i]] != groups_[order[i - 1]]) group_sizes.push_back(0);
      ++group_sizes.back();
    }
    data = sorted_data.data();
    labels = sorted_labels.data();
  }

  DMatrix dm;
  TESSERA_XGB(XGDMatrixCreateFromMat(data, n, nf, std::nanf(""), dm.out()));
  TESSERA_XGB(XGDMatrixSetFloatInfo(dm.get(), "label", labels, n));
  if (rank) TESSERA_XGB(XGDMatrixSetUIntInfo(dm.get(), "group", group_sizes.data(), group_sizes.size()));
  if (continue_rounds > 0 && booster_) {
    // XGBoost computes the current model's margins on the new matrix and
    // fits the added trees to what they leave.
    for (int round = 0; round < continue_rounds; ++round)
      TESSERA_XGB(XGBoosterUpdateOneIter(static_cast<BoosterHandle>(booster_), boosted_rounds_ + round, dm.get()));
    boosted_rounds_ += continue_rounds;
    return Status::ok();
  }
  Booster booster;
  DMatrixHandle dmats[] = {dm.get()};
  TESSERA_XGB(XGBoosterCreate(dmats, 1, booster.out()));
  TESSERA_RETURN_IF_ERROR(set_params(booster.get(), options_));
  for (int round = 0; round < options_.num_rounds; ++round) {
    TESSERA_XGB(XGBoosterUpdateOneIter(booster.get(), round, dm.get()));
  }
  free_booster();
  booster_ = booster.release();
  boosted_rounds_ = options_.num_rounds;
  return Status::ok();
}

Result<std::vector<double>> XGBModel::predict(const std::vector<std::vector<float>>& features) {
  if (!booster_) {
    return Status(ErrorCode::kInvalidArgument, name() + " predict: not trained; call update, pretrain or load first");
  }
  TESSERA_RETURN_IF_ERROR(check_features(features, num_features_, name() + " predict"));
  if (features.empty()) return std::vector<double>{};
  std::vector<float> flat;
  flat.reserve(features.size() * num_features_);
  for (const auto& f : features) flat.insert(flat.end(), f.begin(), f.end());
  DMatrix dm;
  TESSERA_XGB(XGDMatrixCreateFromMat(flat.data(), features.size(), num_features_, std::nanf(""), dm.out()));
  bst_ulong len = 0;
  const float* out = nullptr;
  TESSERA_XGB(XGBoosterPredict(static_cast<BoosterHandle>(booster_), dm.get(), 0, 0, 0, &len, &out));
  if (len != features.size()) {
    return Status(ErrorCode::kInternal, "xgboost predict returned " + std::to_string(len) + " scores for " +
                                            std::to_string(features.size()) + " rows");
  }
  return std::vector<double>(out, out + len);
}

Status XGBModel::save(const std::string& path) const {
  if (!booster_) return Status(ErrorCode::kInvalidArgument, name() + " save: not trained, nothing to save");
  bst_ulong len = 0;
  const char* buf = nullptr;
  TESSERA_XGB(XGBoosterSaveModelToBuffer(static_cast<BoosterHandle>(booster_), R"({"format": "json"})", &len, &buf));
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return Status(ErrorCode::kIOError, "cannot open '" + path + "' for writing");
  file.write(buf, static_cast<std::streamsize>(len));
  file.close();
  if (!file) return Status(ErrorCode::kIOError, "cannot write the model to '" + path + "'");
  return Status::ok();
}

Status XGBModel::load(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Status(ErrorCode::kNotFound, "no model file '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) return Status(ErrorCode::kIOError, "cannot read '" + path + "'");
  Booster booster;
  TESSERA_XGB(XGBoosterCreate(nullptr, 0, booster.out()));
  TESSERA_RETURN_IF_ERROR(xgb_status(XGBoosterLoadModelFromBuffer(booster.get(), bytes.data(), bytes.size()),
                                     "XGBoosterLoadModelFromBuffer", ErrorCode::kParseError)
                              .with_context("model file '" + path + "'"));
  TESSERA_XGB(XGBoosterSetParam(booster.get(), "nthread", std::to_string(std::max(1, options_.nthread)).c_str()));
  TESSERA_XGB(XGBoosterSetParam(booster.get(), "verbosity", "0"));
  bst_ulong nf = 0;
  TESSERA_XGB(XGBoosterGetNumFeature(booster.get(), &nf));
  if (nf == 0 || (!labels_.empty() && nf != num_features_)) {
    return Status(ErrorCode::kParseError, "model file '" + path + "' takes " + std::to_string(nf) +
                                              " features; this model's data has " + std::to_string(num_features_));
  }
  free_booster();
  booster_ = booster.release();
  own_at_full_ = 0;  // the next update retrains from scratch, replacing the loaded trees
  boosted_rounds_ = 0;
  num_features_ = nf;
  return Status::ok();
}

}  // namespace tessera::costmodel
