#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <remat/zoo/network_builder.hpp>

namespace zoo = remat::zoo;
using dims = std::vector<std::int64_t>;

namespace {

const remat::attribute_value& attr(const remat::graph& g, const std::string& node, const std::string& key) {
  const auto v = g.find(node);
  REQUIRE_MESSAGE(v.has_value(), "no node " << node);
  return g.attrs(*v).at(key);
}

dims shape_attr(const remat::graph& g, const std::string& node) { return std::get<dims>(attr(g, node, "shape")); }

zoo::conv2d_options conv(std::int64_t out, zoo::hw kernel, zoo::hw stride, zoo::hw padding, zoo::hw dilation,
                         std::int64_t groups, bool bias) {
  zoo::conv2d_options c;
  c.out_channels = out;
  c.kernel = kernel;
  c.stride = stride;
  c.padding = padding;
  c.dilation = dilation;
  c.groups = groups;
  c.bias = bias;
  return c;
}

zoo::pool_options pool(std::int64_t k, std::int64_t s, std::int64_t p, bool ceil_mode) {
  zoo::pool_options o;
  o.kernel = {k, k};
  o.stride = {s, s};
  o.padding = {p, p};
  o.ceil_mode = ceil_mode;
  return o;
}

}  // namespace

TEST_CASE("conv2d: shape, parameters, attributes and roofline times") {
  zoo::network_builder b("t");
  const zoo::tensor x = b.input("x", {2, 8, 17, 17});
  // 3x3, stride 2, padding 2, dilation 2, groups 4: out = (17 + 4 - 4 - 1) / 2 + 1 = 9.
  const zoo::tensor y = b.conv2d("c", x, conv(16, {3, 3}, {2, 2}, {2, 2}, {2, 2}, 4, true));
  CHECK(y.dims == dims{2, 16, 9, 9});
  CHECK(b.parameter_count() == 16 * (8 / 4) * 9 + 16);
  const remat::graph g = std::move(b).build();
  const auto c = *g.find("c");
  CHECK(g.op(c) == "conv2d");
  CHECK(g.bytes(c) == 2 * 16 * 9 * 9 * 4);
  CHECK(g.params(c) == (16 * 2 * 9 + 16) * 4);
  CHECK(g.reads(c) == remat::backward_reads::inputs);
  CHECK(std::get<std::int64_t>(attr(g, "c", "in_channels")) == 8);
  CHECK(std::get<std::int64_t>(attr(g, "c", "groups")) == 4);
  CHECK(std::get<std::int64_t>(attr(g, "c", "bias")) == 1);
  CHECK(std::get<dims>(attr(g, "c", "dilation")) == dims{2, 2});
  CHECK(std::get<std::string>(attr(g, "c", "dtype")) == "f32");
  const zoo::device_profile& h100 = zoo::profile("h100");
  const double outputs = 2.0 * 16 * 9 * 9, flops = 2 * outputs * 2 * 9 + outputs;
  const double in = 2.0 * 8 * 17 * 17 * 4, out = outputs * 4, params = (16 * 2 * 9 + 16) * 4.0;
  CHECK(g.time(c) == doctest::Approx(std::max(flops / h100.f32_flops, (in + out + params) / h100.bandwidth)));
  // Backward: output gradient, the input it reads, no input gradient (x is a graph input), weights and their gradients.
  CHECK(g.backward_time(c) ==
        doctest::Approx(std::max(2 * flops / h100.f32_flops, (out + in + 2 * params) / h100.bandwidth)));
  CHECK(g.time(*g.find("x")) == 0);
}

TEST_CASE("pooling follows torch's output-size rule, ceil_mode included") {
  zoo::network_builder b("t");
  const zoo::tensor x = b.input("x", {1, 3, 8, 8});
  CHECK(b.max_pool("floor", x, pool(3, 2, 0, false)).dims == dims{1, 3, 3, 3});
  CHECK(b.max_pool("ceil", x, pool(3, 2, 0, true)).dims == dims{1, 3, 4, 4});
  // ceil_mode never starts a window in the right padding: (5 + 2 - 2 + 1) / 2 + 1 = 4 would, so 3.
  const zoo::tensor y = b.input("y", {1, 3, 5, 5});
  CHECK(b.avg_pool("edge", y, pool(2, 2, 1, true)).dims == dims{1, 3, 3, 3});
  zoo::pool_options exclusive = pool(3, 1, 1, false);
  exclusive.count_include_pad = false;
  b.avg_pool("exclusive", x, exclusive);
  CHECK(b.adaptive_avg_pool("adaptive", x, 2, 3).dims == dims{1, 3, 2, 3});
  const remat::graph g = std::move(b).build();
  CHECK(g.reads(*g.find("floor")) == remat::backward_reads::both);
  CHECK(g.reads(*g.find("edge")) == remat::backward_reads::none);
  CHECK(std::get<std::int64_t>(attr(g, "exclusive", "count_include_pad")) == 0);
  CHECK(std::get<std::int64_t>(attr(g, "ceil", "ceil_mode")) == 1);
  CHECK(std::get<dims>(attr(g, "floor", "dilation")) == dims{1, 1});
  CHECK(std::get<dims>(attr(g, "adaptive", "output_size")) == dims{2, 3});
}

TEST_CASE("batch norm counts weight and bias as parameters, running statistics as buffers") {
  zoo::network_builder b("t", zoo::dtype::bf16);
  b.batch_norm("bn", b.input("x", {4, 10, 3, 3}), 0.001, 0.1);
  CHECK(b.parameter_count() == 20);
  const remat::graph g = std::move(b).build();
  const auto bn = *g.find("bn");
  CHECK(g.params(bn) == 20 * 2);  // bf16
  CHECK(g.bytes(bn) == 4 * 10 * 3 * 3 * 2);
  CHECK(std::get<std::int64_t>(attr(g, "bn", "buffers")) == 20);
  CHECK(std::get<double>(attr(g, "bn", "eps")) == 0.001);
  CHECK(std::get<std::string>(attr(g, "bn", "dtype")) == "bf16");
  CHECK(g.reads(bn) == remat::backward_reads::inputs);
}

TEST_CASE("add, concat, flatten, slice, linear, dropout and the loss") {
  zoo::network_builder b("t");
  const zoo::tensor x = b.input("x", {2, 4, 6, 6});
  const zoo::tensor labels = b.labels("labels", 2);
  const zoo::tensor r = b.relu("r", x);
  const zoo::tensor s = b.add("s", {r, r, x});
  const zoo::tensor shifted = b.slice("shift", s, {0, 0, 1, 1}, {2, 4, 6, 6});
  CHECK(shifted.dims == dims{2, 4, 5, 5});
  const zoo::tensor c = b.concat("c", {s, r});
  CHECK(c.dims == dims{2, 8, 6, 6});
  const zoo::tensor f = b.flatten("f", c);
  CHECK(f.dims == dims{2, 288});
  const zoo::tensor d = b.dropout("d", f, 0.5);
  const zoo::tensor logits = b.linear("fc", d, 10);
  CHECK(b.parameter_count() == 288 * 10 + 10);
  const zoo::tensor loss = b.softmax_cross_entropy("loss", logits, labels, 0.4);
  CHECK(loss.dims == dims{1});
  const remat::graph g = std::move(b).build();
  const auto sum = *g.find("s");
  REQUIRE(g.inputs(sum).size() == 3);  // operands in call order, repeats kept
  CHECK(g.node_name(g.inputs(sum)[0]) == "r");
  CHECK(g.node_name(g.inputs(sum)[1]) == "r");
  CHECK(g.node_name(g.inputs(sum)[2]) == "x");
  CHECK(g.bytes(*g.find("labels")) == 2 * 8);
  CHECK(std::get<std::string>(attr(g, "labels", "dtype")) == "i64");
  CHECK(std::get<dims>(attr(g, "shift", "begin")) == dims{0, 0, 1, 1});
  CHECK(std::get<double>(attr(g, "loss", "loss_weight")) == 0.4);
  CHECK(std::get<double>(attr(g, "d", "p")) == 0.5);
  CHECK(std::get<std::int64_t>(attr(g, "f", "start_dim")) == 1);
  CHECK(std::get<std::int64_t>(attr(g, "c", "axis")) == 1);
  CHECK(g.reads(*g.find("r")) == remat::backward_reads::output);
  for (const char* none : {"s", "shift", "c", "f", "d"}) CHECK(g.reads(*g.find(none)) == remat::backward_reads::none);
  CHECK(g.reads(*g.find("loss")) == remat::backward_reads::inputs);
  CHECK(shape_attr(g, "loss") == dims{1});
}

TEST_CASE("transformer ops state their shapes") {
  zoo::network_builder b("t", zoo::dtype::f16, zoo::profile("a100"));
  const zoo::tensor x = b.input("x", {6, 8});
  const zoo::tensor n = b.layer_norm("ln", x);
  CHECK(b.parameter_count() == 16);
  const zoo::tensor q = b.permute("q", b.reshape("split", n, {2, 3, 2, 4}), {0, 2, 1, 3});
  CHECK(q.dims == dims{2, 2, 3, 4});
  const zoo::tensor k = b.permute("k", b.reshape("split_k", n, {2, 3, 2, 4}), {0, 2, 3, 1});
  const zoo::tensor scores = b.matmul("scores", q, k, 0.5);
  CHECK(scores.dims == dims{2, 2, 3, 3});
  const zoo::tensor p = b.softmax("p", scores);
  b.gelu("g", p);
  const remat::graph g = std::move(b).build();
  CHECK(std::get<dims>(attr(g, "k", "dims")) == dims{0, 2, 3, 1});
  CHECK(std::get<double>(attr(g, "scores", "scale")) == 0.5);
  CHECK(std::get<std::int64_t>(attr(g, "p", "dim")) == 3);
  CHECK(std::get<dims>(attr(g, "ln", "normalized_shape")) == dims{8});
  CHECK(g.reads(*g.find("p")) == remat::backward_reads::output);
  CHECK(g.reads(*g.find("g")) == remat::backward_reads::inputs);
  CHECK(g.reads(*g.find("scores")) == remat::backward_reads::inputs);
  CHECK(g.reads(*g.find("split")) == remat::backward_reads::none);
}

TEST_CASE("segmentation ops: transposed convolution, bilinear upsampling, a per-pixel loss") {
  zoo::network_builder b("t");
  const zoo::tensor x = b.input("x", {2, 8, 5, 7});
  zoo::conv_transpose2d_options o;
  o.out_channels = 4;
  o.kernel = {3, 3};
  o.stride = {2, 2};
  o.padding = {1, 1};
  o.output_padding = {1, 0};
  o.bias = true;
  // (5 − 1)·2 − 2 + 3 + 1 = 10 and (7 − 1)·2 − 2 + 3 = 13.
  const zoo::tensor y = b.conv_transpose2d("up", x, o);
  CHECK(y.dims == dims{2, 4, 10, 13});
  CHECK(b.parameter_count() == 8 * 4 * 9 + 4);
  const zoo::tensor z = b.upsample_bilinear("resize", y, 21, 26, true);
  CHECK(z.dims == dims{2, 4, 21, 26});
  const zoo::tensor labels = b.labels("labels", dims{2, 21, 26});
  b.softmax_cross_entropy("loss", z, labels);
  CHECK_THROWS_WITH_AS(b.softmax_cross_entropy("bad", z, b.labels("rows", 2)),
                       "node 'bad': labels must be i64 of shape [2, 21, 26]", remat::error);
  o.output_padding = {2, 0};
  CHECK_THROWS_WITH_AS(b.conv_transpose2d("wide", x, o), doctest::Contains("below the stride"), remat::error);
  CHECK_THROWS_WITH_AS(b.upsample_bilinear("empty", y, 0, 4), doctest::Contains("positive"), remat::error);
  const remat::graph g = std::move(b).build();
  CHECK(std::get<dims>(attr(g, "up", "output_padding")) == dims{1, 0});
  CHECK(std::get<std::int64_t>(attr(g, "resize", "align_corners")) == 1);
  CHECK(g.reads(*g.find("up")) == remat::backward_reads::inputs);
  CHECK(g.reads(*g.find("resize")) == remat::backward_reads::none);
  // Every input element meets every tap and output channel: 2·(2·8·5·7)·(4·9) + 2·4·10·13 bias adds.
  const double flops = 2.0 * (2 * 8 * 5 * 7) * (4 * 9) + 2 * 4 * 10 * 13;
  CHECK(g.time(*g.find("up")) >= flops / zoo::profile("h100").flops(zoo::dtype::f32));
}

TEST_CASE("shapes that do not fit are refused, naming the node") {
  zoo::network_builder b("t");
  const zoo::tensor x = b.input("x", {2, 6, 4, 4});
  const zoo::tensor flat = b.flatten("flat", x);
  CHECK_THROWS_WITH_AS(b.linear("fc", x, 3), "node 'fc': needs a rank-2 input, got [2, 6, 4, 4]", remat::error);
  CHECK_THROWS_WITH_AS(b.conv2d("c", x, conv(8, {5, 5}, {1, 1}, {0, 0}, {1, 1}, 1, false)),
                       "node 'c': input [2, 6, 4, 4] is too small: the output would be [2, 8, 0, 0]", remat::error);
  CHECK_THROWS_WITH_AS(b.conv2d("g", x, conv(8, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 4, false)),
                       doctest::Contains("groups (4) must divide"), remat::error);
  CHECK_THROWS_WITH_AS(b.add("a", {x, flat}), doctest::Contains("add operands differ in shape"), remat::error);
  CHECK_THROWS_WITH_AS(b.add("one", {x}), doctest::Contains("at least two"), remat::error);
  CHECK_THROWS_WITH_AS(b.concat("cat", {x, flat}), doctest::Contains("differ in rank"), remat::error);
  CHECK_THROWS_WITH_AS(b.softmax_cross_entropy("loss", flat, flat), doctest::Contains("labels must be i64"), remat::error);
  CHECK_THROWS_WITH_AS(b.reshape("r", x, {5, 5}), doctest::Contains("cannot reshape"), remat::error);
  CHECK_THROWS_WITH_AS(b.slice("s", x, {0, 0, 3, 0}, {2, 6, 3, 4}), doctest::Contains("is empty"), remat::error);
  CHECK_THROWS_AS(zoo::network_builder("t", zoo::dtype::i64), remat::error);
  b.relu("twice", x);
  b.relu("twice", x);
  CHECK_THROWS_AS((void)std::move(b).build(), remat::invalid_graph);
}
