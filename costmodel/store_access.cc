// Per-access analysis of one store: bytes, footprints, strides, reuse, the
// buffer slots, arithmetic intensity and the cache-capacity miss estimates.
#include <algorithm>

#include "costmodel/extractor.h"

namespace tessera::costmodel::detail {

void Extractor::access_features(const StoreNode* op, Row& row, int lanes, double outer, double flops_per_exec) {
  double* r = row.store;
  const int depth = static_cast<int>(loops_.size());
  extents_.resize(depth + (lanes > 1 ? 1 : 0));
  for (int i = 0; i < depth; ++i) extents_[i] = loops_[i].extent;
  if (lanes > 1) extents_[depth] = lanes;

  const int n = static_cast<int>(accesses_.size());
  stats_.assign(n, AccessStats{});
  int vector_accesses = 0, strided = 0;
  if (access_coefs_.size() < size_t(n)) access_coefs_.resize(n);
  for (int a = 0; a < n; ++a) analyse_access(a, lanes, outer, vector_accesses, strided);

  intensity_features(r, outer, flops_per_exec);
  const AccessStats& out = stats_[n - 1];
  r[kS_out_region_1] = out.level[0].elements;
  r[kS_out_region_2] = out.level[1].elements;
  r[kS_out_region_all] = out.whole.elements;
  r[kS_num_accesses] = n;
  r[kS_vec_strided] = vector_accesses > 0 ? double(strided) / vector_accesses : 0;
  cache_misses(row);
  buffer_features(row);
  accumulation_distance(r);
}

void Extractor::analyse_access(int a, int lanes, double outer, int& vector_accesses, int& strided) {
  const int depth = static_cast<int>(loops_.size());
  const int lane_slot = lanes > 1 ? depth : -1;
  const Access& acc = accesses_[a];
  AccessStats& st = stats_[a];
  std::vector<double>& coefs = access_coefs_[a];
  linear_coefficients(acc.index, vars_, lane_slot, &coefs);
  const int elem_bytes = acc.buffer->dtype.storage_bytes();
  const double cap = double(acc.buffer->num_elements());
  // A scalar load inside a vector store runs once per vector, not per lane.
  const bool vector_access = lanes > 1 && acc.index.dtype().lanes > 1;
  const double count = outer * (vector_access ? lanes : 1);
  st.bytes = count * elem_bytes;

  loop_set_.clear();
  for (int i = 0; i < depth; ++i) loop_set_.push_back(i);
  if (vector_access) loop_set_.push_back(depth);
  st.whole = footprint(coefs, extents_, loop_set_, elem_bytes, cap);
  if (vector_access) {
    ++vector_accesses;
    if (coefs[depth] != 0 && coefs[depth] != 1) ++strided;
  }
  if (!loop_set_.empty()) {
    const int inner = loop_set_.back();
    st.stride = coefs[inner];
    const Footprint one = footprint(coefs, extents_, {inner}, elem_bytes, cap);
    st.lines = count / double(std::max<int64_t>(1, extents_[inner])) * one.lines;
  } else {
    st.lines = 1;
  }
  for (int i = static_cast<int>(loop_set_.size()); i-- > 0;) {
    const int l = loop_set_[i];
    if (extents_[l] <= 1) continue;
    if (coefs[l] == 0) {
      if (st.reuse_loop < 0) st.reuse_loop = l;
    } else if (st.stride_moving == 0) {
      st.stride_moving = coefs[l];
    }
  }
  // Footprints inside the innermost 1, 2, 3 real loops (lanes always inside).
  for (int k = 0; k < 3; ++k) {
    loop_set_.clear();
    for (int i = std::max(0, depth - 1 - k); i < depth; ++i) loop_set_.push_back(i);
    if (vector_access) loop_set_.push_back(depth);
    st.level[k] = footprint(coefs, extents_, loop_set_, elem_bytes, cap);
  }
}

// Arithmetic intensity at each level: flops inside it / unique bytes inside it.
void Extractor::intensity_features(double* r, double outer, double flops_per_exec) const {
  const int depth = static_cast<int>(loops_.size());
  const int n = static_cast<int>(accesses_.size());
  double inner_prod = 1;
  for (int k = 0; k < 4; ++k) {
    const bool whole = k == 3;
    if (!whole && depth - 1 - k >= 0) inner_prod *= double(loops_[depth - 1 - k].extent);
    double bytes = 0;
    for (int a = 0; a < n; ++a) {
      const Footprint& f = whole ? stats_[a].whole : stats_[a].level[k];
      bytes += f.elements * accesses_[a].buffer->dtype.storage_bytes();
    }
    const double flops = flops_per_exec * (whole ? outer : inner_prod);
    r[kS_ai_1 + k] = bytes > 0 ? flops / bytes : 0;
  }
}

// Groups the accesses by buffer (at most 16 buffers; later ones are left
// out of the groups but still count in the totals).
int Extractor::group_buffers(double* r, BufferGroup* groups) const {
  const int n = static_cast<int>(accesses_.size());
  int num_groups = 0;
  for (int a = 0; a < n; ++a) {
    const AccessStats& st = stats_[a];
    r[kS_total_bytes] += st.bytes;
    r[kS_total_lines] += st.lines;
    int g = 0;
    while (g < num_groups && groups[g].buffer != accesses_[a].buffer) ++g;
    if (g == num_groups) {
      if (num_groups == kMaxGroups) continue;
      groups[num_groups++] = BufferGroup{accesses_[a].buffer};
    }
    BufferGroup& gr = groups[g];
    (accesses_[a].is_write ? gr.writes : gr.reads) += 1;
    gr.bytes += st.bytes;
    gr.lines += st.lines;
    const int eb = accesses_[a].buffer->dtype.storage_bytes();
    gr.unique_bytes = std::max(gr.unique_bytes, st.whole.elements * eb);
    gr.unique_lines = std::max(gr.unique_lines, st.whole.lines);
    if (gr.rep < 0 || st.bytes > stats_[gr.rep].bytes) gr.rep = a;
  }
  return num_groups;
}

// The buffer slots, largest traffic first. Reuse distance in bytes counts
// every access's footprint inside the reuse loop.
void Extractor::buffer_features(Row& row) {
  double* r = row.store;
  BufferGroup groups[kMaxGroups];
  const int num_groups = group_buffers(r, groups);
  r[kS_num_buffers] = num_groups;
  for (int g = 0; g < num_groups; ++g) r[kS_total_unique_lines] += groups[g].unique_lines;
  std::stable_sort(groups, groups + num_groups,
                   [](const BufferGroup& x, const BufferGroup& y) { return x.bytes > y.bytes; });

  double min_reuse_bytes = 0;
  for (int g = 0; g < std::min(num_groups, kMaxBuffers); ++g) {
    const BufferGroup& gr = groups[g];
    const AccessStats& st = stats_[gr.rep];
    double* b = row.buffers[g];
    b[kB_is_read] = gr.writes == 0;
    b[kB_is_write] = gr.reads == 0;
    b[kB_is_read_write] = gr.reads > 0 && gr.writes > 0;
    b[kB_is_local] = gr.buffer->scope != MemoryScope::kGlobal;
    b[kB_bytes] = gr.bytes;
    b[kB_unique_bytes] = gr.unique_bytes;
    b[kB_lines] = gr.lines;
    b[kB_unique_lines] = gr.unique_lines;
    b[kB_stride] = st.stride;
    b[kB_stride_moving] = st.stride_moving;
    if (st.reuse_loop >= 0) {
      const double dis_bytes = reuse_loop_features(st.reuse_loop, b);
      min_reuse_bytes = min_reuse_bytes == 0 ? dis_bytes : std::min(min_reuse_bytes, dis_bytes);
    } else if (gr.reads + gr.writes > 1) {
      b[kB_reuse_serial] = 1;
      b[kB_reuse_ct] = gr.reads + gr.writes - 1;
    } else {
      b[kB_reuse_none] = 1;
    }
    b[kB_bytes_d_reuse_ct] = gr.bytes / std::max(1.0, b[kB_reuse_ct]);
  }
  r[kS_min_reuse_bytes] = min_reuse_bytes;
}

// Fills a buffer slot's reuse features for reuse carried by loop `l`;
// returns the reuse distance in bytes.
double Extractor::reuse_loop_features(int l, double* b) {
  const int n = static_cast<int>(accesses_.size());
  double dis_iter = 1;
  for (int i = l + 1; i < static_cast<int>(extents_.size()); ++i) dis_iter *= double(extents_[i]);
  loop_set_.clear();
  for (int i = l + 1; i < static_cast<int>(extents_.size()); ++i) loop_set_.push_back(i);
  double dis_bytes = 0;
  for (int a = 0; a < n; ++a) {
    const BufferNode* buf = accesses_[a].buffer;
    dis_bytes +=
        footprint(access_coefs_[a], extents_, loop_set_, buf->dtype.storage_bytes(), double(buf->num_elements()))
            .elements *
        buf->dtype.storage_bytes();
  }
  b[kB_reuse_loop] = 1;
  b[kB_reuse_dis_iter] = dis_iter;
  b[kB_reuse_dis_bytes] = dis_bytes;
  b[kB_reuse_ct] = double(extents_[l]);
  return dis_bytes;
}

// An update reads the element it writes: the iterations between two
// updates of one element bound the independent work in flight (a vector
// op counts once; its lanes are not iterations).
void Extractor::accumulation_distance(double* r) const {
  const int depth = static_cast<int>(loops_.size());
  const int n = static_cast<int>(accesses_.size());
  const AccessStats& write = stats_[n - 1];
  bool reads_itself = false;
  for (int a = 0; a + 1 < n && !reads_itself; ++a)
    reads_itself = accesses_[a].buffer == accesses_[n - 1].buffer && access_coefs_[a] == access_coefs_[n - 1];
  if (reads_itself && write.reuse_loop >= 0 && write.reuse_loop < depth) {
    double distance = 1;
    for (int i = write.reuse_loop + 1; i < depth; ++i) distance *= double(extents_[i]);
    r[kS_acc_distance] = distance;
  }
}

// A simple capacity model: an access keeps its reuse inside the outermost
// loop whose working set (all accesses' footprints inside it) fits in the
// cache, and fetches its footprint there again in every iteration of the
// loops outside it. Run after access_features (uses access_coefs_, extents_).

void Extractor::cache_misses(Row& row) {
  const int depth = static_cast<int>(loops_.size());
  const int n = static_cast<int>(accesses_.size());
  const bool lanes = static_cast<int>(extents_.size()) > depth;
  // Working set and lines of each access inside loops [l, depth) and the lanes.
  level_bytes_.assign(depth + 1, 0.0);
  level_lines_.assign(static_cast<size_t>(depth + 1) * n, 0.0);
  for (int a = 0; a < n; ++a) {
    // A second access with the same buffer and index (C[i] = C[i] + ...)
    // touches nothing new.
    bool repeat = false;
    for (int b = 0; b < a && !repeat; ++b)
      repeat = accesses_[b].buffer == accesses_[a].buffer && access_coefs_[b] == access_coefs_[a];
    const BufferNode* buf = accesses_[a].buffer;
    const int eb = buf->dtype.storage_bytes();
    const bool vector_access = lanes && accesses_[a].index.dtype().lanes > 1;
    for (int l = depth; l >= 0; --l) {
      loop_set_.clear();
      for (int i = l; i < depth; ++i) loop_set_.push_back(i);
      if (vector_access) loop_set_.push_back(depth);
      const Footprint f = footprint(access_coefs_[a], extents_, loop_set_, eb, double(buf->num_elements()));
      if (!repeat) level_bytes_[l] += f.elements * eb;
      level_lines_[static_cast<size_t>(l) * n + a] = repeat ? 0 : f.lines;
    }
  }
  const int64_t sizes[2] = {kL1Bytes, kL2Bytes};
  for (int c = 0; c < 2; ++c) {
    int l = 0;
    while (l < depth && level_bytes_[l] > double(sizes[c])) ++l;
    double outer = 1;
    for (int i = 0; i < l; ++i) outer *= double(extents_[i]);
    double lines = 0;
    for (int a = 0; a < n; ++a) lines += level_lines_[static_cast<size_t>(l) * n + a];
    row.store[c == 0 ? kS_l1_misses : kS_l2_misses] = outer * lines;
  }
}

}  // namespace tessera::costmodel::detail
