// The oracle for step.cpp: the same model written as directly as possible, one loop per
// formula, in double. Shares nothing with the fast path but the parameter table.
#include "train/reference.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace mhaviz::train {
namespace {

using Vec = std::vector<double>;

// The parameter tensors by name, as pointers into the double buffers.
struct Params {
  const GptTrainConfig& c;
  const std::vector<ParamTensor> layout;
  const double* p;
  double* g;  // null: no gradients
  explicit Params(const GptTrainConfig& config, const double* values, double* grads)
      : c(config), layout(parameter_layout(config)), p(values), g(grads) {}
  std::int64_t at(const std::string& name) const {
    for (const ParamTensor& t : layout)
      if (t.name == name) return t.offset;
    return -1;
  }
};

// y (N, O) = x (N, I) · Wᵀ + b.
Vec linear(const Vec& x, const double* W, const double* b, std::int64_t N, int I, int O) {
  Vec y(static_cast<std::size_t>(N * O));
  for (std::int64_t n = 0; n < N; ++n)
    for (int o = 0; o < O; ++o) {
      double s = b ? b[o] : 0.0;
      for (int i = 0; i < I; ++i) s += x[static_cast<std::size_t>(n * I + i)] * W[o * I + i];
      y[static_cast<std::size_t>(n * O + o)] = s;
    }
  return y;
}

// dy (N, O) -> dx (N, I) (returned), dW (O, I) and db (O) added (when not null).
Vec linear_back(const Vec& dy, const Vec& x, const double* W, double* dW, double* db, std::int64_t N, int I, int O) {
  Vec dx(static_cast<std::size_t>(N * I), 0.0);
  for (std::int64_t n = 0; n < N; ++n)
    for (int o = 0; o < O; ++o) {
      const double d = dy[static_cast<std::size_t>(n * O + o)];
      if (db) db[o] += d;
      for (int i = 0; i < I; ++i) {
        dx[static_cast<std::size_t>(n * I + i)] += d * W[o * I + i];
        if (dW) dW[o * I + i] += d * x[static_cast<std::size_t>(n * I + i)];
      }
    }
  return dx;
}

// LayerNorm over rows of C: y = s·x̂ + h, x̂ = (x − mean) / √(var + eps); keeps x̂ and 1/σ.
struct Norm {
  Vec y, xhat, rstd;
};
Norm layernorm(const Vec& x, const double* s, const double* h, std::int64_t N, int C) {
  Norm r{Vec(x.size()), Vec(x.size()), Vec(static_cast<std::size_t>(N))};
  for (std::int64_t n = 0; n < N; ++n) {
    double mean = 0, var = 0;
    for (int c = 0; c < C; ++c) mean += x[static_cast<std::size_t>(n * C + c)] / C;
    for (int c = 0; c < C; ++c) var += std::pow(x[static_cast<std::size_t>(n * C + c)] - mean, 2) / C;
    r.rstd[static_cast<std::size_t>(n)] = 1.0 / std::sqrt(var + 1e-5);
    for (int c = 0; c < C; ++c) {
      const std::size_t i = static_cast<std::size_t>(n * C + c);
      r.xhat[i] = (x[i] - mean) * r.rstd[static_cast<std::size_t>(n)];
      r.y[i] = s[c] * r.xhat[i] + h[c];
    }
  }
  return r;
}

// dy -> dx (returned); ds, dh added. dx = rstd·(dx̂ − mean(dx̂) − x̂·mean(dx̂·x̂)), dx̂ = dy·s.
Vec layernorm_back(const Vec& dy, const Norm& f, const double* s, double* ds, double* dh, std::int64_t N, int C) {
  Vec dx(dy.size());
  for (std::int64_t n = 0; n < N; ++n) {
    double m1 = 0, m2 = 0;
    for (int c = 0; c < C; ++c) {
      const std::size_t i = static_cast<std::size_t>(n * C + c);
      ds[c] += dy[i] * f.xhat[i];
      dh[c] += dy[i];
      m1 += dy[i] * s[c] / C;
      m2 += dy[i] * s[c] * f.xhat[i] / C;
    }
    for (int c = 0; c < C; ++c) {
      const std::size_t i = static_cast<std::size_t>(n * C + c);
      dx[i] = f.rstd[static_cast<std::size_t>(n)] * (dy[i] * s[c] - m1 - f.xhat[i] * m2);
    }
  }
  return dx;
}

constexpr double kGeluK = 0.044715;
double gelu(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + kGeluK * x * x * x))); }
double gelu_grad(double x) {
  const double a = std::sqrt(2 / std::numbers::pi), t = std::tanh(a * (x + kGeluK * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * a * (1 + 3 * kGeluK * x * x);
}

// One block's attention: in (B·T, C) -> what it kept for the backward.
struct Attention {
  Vec q, k, v;  // (B·T, C) each, the projections
  Vec att;      // (B, H, T, T)
  Vec ctx;      // (B·T, C) merged
};

Attention attention(const Params& P, const std::string& pre, const Vec& in, int B, int T) {
  const int C = P.c.emb_dim, H = P.c.n_heads, hd = C / H;
  const std::int64_t N = static_cast<std::int64_t>(B) * T;
  auto bias = [&](const char* w) {
    const std::int64_t o = P.at(pre + w + ".bias");
    return o < 0 ? nullptr : P.p + o;
  };
  Attention a{linear(in, P.p + P.at(pre + "W_query.weight"), bias("W_query"), N, C, C),
              linear(in, P.p + P.at(pre + "W_key.weight"), bias("W_key"), N, C, C),
              linear(in, P.p + P.at(pre + "W_value.weight"), bias("W_value"), N, C, C),
              Vec(static_cast<std::size_t>(B) * H * T * T, 0.0), Vec(static_cast<std::size_t>(N * C), 0.0)};
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < T; ++i) {
        double* row = a.att.data() + ((static_cast<std::int64_t>(b) * H + h) * T + i) * T;
        double mx = -INFINITY;
        for (int j = 0; j <= i; ++j) {
          double s = 0;
          for (int d = 0; d < hd; ++d)
            s += a.q[static_cast<std::size_t>((b * T + i) * C + h * hd + d)] *
                 a.k[static_cast<std::size_t>((b * T + j) * C + h * hd + d)];
          row[j] = s / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, row[j]);
        }
        double sum = 0;
        for (int j = 0; j <= i; ++j) sum += row[j] = std::exp(row[j] - mx);
        for (int j = 0; j <= i; ++j) row[j] /= sum;
        for (int d = 0; d < hd; ++d) {
          double s = 0;
          for (int j = 0; j <= i; ++j) s += row[j] * a.v[static_cast<std::size_t>((b * T + j) * C + h * hd + d)];
          a.ctx[static_cast<std::size_t>((b * T + i) * C + h * hd + d)] = s;
        }
      }
  return a;
}

// dctx (B·T, C) -> d(in) (returned); the projections' gradients added.
Vec attention_back(const Params& P, const std::string& pre, const Attention& a, const Vec& dctx, const Vec& in, int B,
                   int T) {
  const int C = P.c.emb_dim, H = P.c.n_heads, hd = C / H;
  const std::int64_t N = static_cast<std::int64_t>(B) * T;
  Vec dq(a.q.size(), 0.0), dk(a.k.size(), 0.0), dv(a.v.size(), 0.0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < T; ++i) {
        const double* row = a.att.data() + ((static_cast<std::int64_t>(b) * H + h) * T + i) * T;
        auto at = [&](const Vec& m, int t, int d) { return m[static_cast<std::size_t>((b * T + t) * C + h * hd + d)]; };
        Vec datt(static_cast<std::size_t>(i + 1), 0.0);
        for (int j = 0; j <= i; ++j)
          for (int d = 0; d < hd; ++d) {
            datt[static_cast<std::size_t>(j)] += at(dctx, i, d) * at(a.v, j, d);
            dv[static_cast<std::size_t>((b * T + j) * C + h * hd + d)] += row[j] * at(dctx, i, d);
          }
        double dot = 0;
        for (int j = 0; j <= i; ++j) dot += row[j] * datt[static_cast<std::size_t>(j)];
        for (int j = 0; j <= i; ++j) {
          const double ds = row[j] * (datt[static_cast<std::size_t>(j)] - dot) / std::sqrt(static_cast<double>(hd));
          for (int d = 0; d < hd; ++d) {
            dq[static_cast<std::size_t>((b * T + i) * C + h * hd + d)] += ds * at(a.k, j, d);
            dk[static_cast<std::size_t>((b * T + j) * C + h * hd + d)] += ds * at(a.q, i, d);
          }
        }
      }
  Vec din(static_cast<std::size_t>(N * C), 0.0);
  const std::pair<const char*, const Vec*> parts[3] = {{"W_query", &dq}, {"W_key", &dk}, {"W_value", &dv}};
  for (const auto& [w, d] : parts) {
    const std::int64_t bo = P.at(pre + w + ".bias");
    const Vec dx = linear_back(*d, in, P.p + P.at(pre + w + ".weight"), P.g + P.at(pre + w + ".weight"),
                               bo < 0 ? nullptr : P.g + bo, N, C, C);
    for (std::size_t i = 0; i < din.size(); ++i) din[i] += dx[i];
  }
  return din;
}

// What one block kept for the backward.
struct Block {
  Norm n1, n2;
  Attention att;
  Vec mid, fc;
};

}  // namespace

double loss_and_grads_double(const GptTrainConfig& c, std::span<const double> params,
                             std::span<const std::int32_t> tokens, int B, std::vector<double>* grads) {
  const int T = c.context_length, C = c.emb_dim, V = c.vocab_size, L = c.n_layers;
  const std::int64_t N = static_cast<std::int64_t>(B) * T;
  if (tokens.size() != static_cast<std::size_t>(B * (T + 1)))
    throw std::invalid_argument("reference: wrong token count");
  if (grads) grads->assign(params.size(), 0.0);
  const Params P(c, params.data(), grads ? grads->data() : nullptr);
  auto id = [&](std::int64_t n, int shift) {
    return tokens[static_cast<std::size_t>(n / T * (T + 1) + n % T + shift)];
  };

  Vec x(static_cast<std::size_t>(N * C));
  for (std::int64_t n = 0; n < N; ++n)
    for (int k = 0; k < C; ++k)
      x[static_cast<std::size_t>(n * C + k)] =
          P.p[P.at("tok_emb.weight") + id(n, 0) * C + k] + P.p[P.at("pos_emb.weight") + (n % T) * C + k];
  std::vector<Vec> xs{x};
  std::vector<Block> blocks(static_cast<std::size_t>(L));
  for (int l = 0; l < L; ++l) {
    const std::string pre = "trf_blocks." + std::to_string(l) + ".";
    Block& k = blocks[static_cast<std::size_t>(l)];
    if (!c.attn_only) k.n1 = layernorm(x, P.p + P.at(pre + "norm1.scale"), P.p + P.at(pre + "norm1.shift"), N, C);
    k.att = attention(P, pre + "att.", c.attn_only ? x : k.n1.y, B, T);
    const Vec o =
        linear(k.att.ctx, P.p + P.at(pre + "att.out_proj.weight"), P.p + P.at(pre + "att.out_proj.bias"), N, C, C);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    if (!c.attn_only) {
      k.mid = x;
      k.n2 = layernorm(x, P.p + P.at(pre + "norm2.scale"), P.p + P.at(pre + "norm2.shift"), N, C);
      k.fc = linear(k.n2.y, P.p + P.at(pre + "ff.layers.0.weight"), P.p + P.at(pre + "ff.layers.0.bias"), N, C, 4 * C);
      Vec g(k.fc.size());
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = gelu(k.fc[i]);
      const Vec f =
          linear(g, P.p + P.at(pre + "ff.layers.2.weight"), P.p + P.at(pre + "ff.layers.2.bias"), N, 4 * C, C);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] += f[i];
    }
    xs.push_back(x);
  }
  Norm fin;
  if (!c.attn_only) fin = layernorm(x, P.p + P.at("final_norm.scale"), P.p + P.at("final_norm.shift"), N, C);
  const Vec& hf = c.attn_only ? x : fin.y;
  const Vec logits = linear(hf, P.p + P.at("out_head.weight"), nullptr, N, C, V);
  double loss = 0;
  Vec dlogits(logits.size());
  for (std::int64_t n = 0; n < N; ++n) {
    const double* z = logits.data() + n * V;
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < V; ++j) mx = std::max(mx, z[j]);
    for (int j = 0; j < V; ++j) sum += std::exp(z[j] - mx);
    const double lse = mx + std::log(sum);
    loss += (lse - z[id(n, 1)]) / static_cast<double>(N);
    for (int j = 0; j < V; ++j)
      dlogits[static_cast<std::size_t>(n * V + j)] =
          (std::exp(z[j] - lse) - (j == id(n, 1) ? 1.0 : 0.0)) / static_cast<double>(N);
  }
  if (!grads) return loss;

  Vec dx = linear_back(dlogits, hf, P.p + P.at("out_head.weight"), P.g + P.at("out_head.weight"), nullptr, N, C, V);
  if (!c.attn_only)
    dx = layernorm_back(dx, fin, P.p + P.at("final_norm.scale"), P.g + P.at("final_norm.scale"),
                        P.g + P.at("final_norm.shift"), N, C);
  for (int l = L - 1; l >= 0; --l) {
    const std::string pre = "trf_blocks." + std::to_string(l) + ".";
    const Block& k = blocks[static_cast<std::size_t>(l)];
    if (!c.attn_only) {
      Vec g(k.fc.size());
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = gelu(k.fc[i]);
      Vec dg = linear_back(dx, g, P.p + P.at(pre + "ff.layers.2.weight"), P.g + P.at(pre + "ff.layers.2.weight"),
                           P.g + P.at(pre + "ff.layers.2.bias"), N, 4 * C, C);
      for (std::size_t i = 0; i < dg.size(); ++i) dg[i] *= gelu_grad(k.fc[i]);
      const Vec dn2 =
          linear_back(dg, k.n2.y, P.p + P.at(pre + "ff.layers.0.weight"), P.g + P.at(pre + "ff.layers.0.weight"),
                      P.g + P.at(pre + "ff.layers.0.bias"), N, C, 4 * C);
      const Vec dmid = layernorm_back(dn2, k.n2, P.p + P.at(pre + "norm2.scale"), P.g + P.at(pre + "norm2.scale"),
                                      P.g + P.at(pre + "norm2.shift"), N, C);
      for (std::size_t i = 0; i < dx.size(); ++i) dx[i] += dmid[i];
    }
    const Vec dctx =
        linear_back(dx, k.att.ctx, P.p + P.at(pre + "att.out_proj.weight"), P.g + P.at(pre + "att.out_proj.weight"),
                    P.g + P.at(pre + "att.out_proj.bias"), N, C, C);
    const Vec& in = c.attn_only ? xs[static_cast<std::size_t>(l)] : k.n1.y;
    Vec din = attention_back(P, pre + "att.", k.att, dctx, in, B, T);
    if (!c.attn_only)
      din = layernorm_back(din, k.n1, P.p + P.at(pre + "norm1.scale"), P.g + P.at(pre + "norm1.scale"),
                           P.g + P.at(pre + "norm1.shift"), N, C);
    for (std::size_t i = 0; i < dx.size(); ++i) dx[i] += din[i];
  }
  for (std::int64_t n = 0; n < N; ++n)
    for (int k = 0; k < C; ++k) {
      P.g[P.at("tok_emb.weight") + id(n, 0) * C + k] += dx[static_cast<std::size_t>(n * C + k)];
      P.g[P.at("pos_emb.weight") + (n % T) * C + k] += dx[static_cast<std::size_t>(n * C + k)];
    }
  return loss;
}

double loss_and_grads_reference(const GptTrainModel& m, std::span<const std::int32_t> tokens, int B,
                                std::vector<double>* grads) {
  const std::vector<double> p(m.params.begin(), m.params.end());
  return loss_and_grads_double(m.config, p, tokens, B, grads);
}

}  // namespace mhaviz::train
