#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <remat/analysis/bounds.hpp>
#include <remat/io/json.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/solvers/baselines.hpp>
#include <remat/zoo/models.hpp>

namespace zoo = remat::zoo;

namespace {

std::vector<std::int64_t> shape_of(const remat::graph& g, const std::string& node) {
  const auto v = g.find(node);
  REQUIRE_MESSAGE(v.has_value(), "no node " << node);
  return std::get<std::vector<std::int64_t>>(g.attrs(*v).at("shape"));
}

std::uint64_t parameter_elements(const remat::graph& g, const std::string& skip_prefix = {}) {
  std::uint64_t bytes = 0;
  for (std::size_t v = 0; v < g.size(); ++v)
    if (skip_prefix.empty() || g.node_name(v).rfind(skip_prefix, 0) != 0) bytes += g.params(v);
  return bytes / 4;  // f32
}

zoo::build_options sized(std::int64_t batch, zoo::dtype type = zoo::dtype::f32, std::string device = "h100",
                         std::int64_t height = 0, std::int64_t width = 0) {
  zoo::build_options o;
  o.batch = batch;
  o.height = height;
  o.width = width;
  o.type = type;
  o.device = std::move(device);
  return o;
}

// What each op's backward reads: the op reference of docs/zoo.md.
remat::backward_reads contract(const std::string& op) {
  using r = remat::backward_reads;
  const std::vector<std::pair<std::string, r>> table{
      {"input", r::none},     {"conv2d", r::inputs},   {"batch_norm", r::inputs},        {"relu", r::output},
      {"sigmoid", r::output}, {"max_pool", r::both},   {"avg_pool", r::none},            {"adaptive_avg_pool", r::none},
      {"add", r::none},       {"concat", r::none},     {"linear", r::inputs},            {"dropout", r::none},
      {"flatten", r::none},   {"slice", r::none},      {"softmax_cross_entropy", r::inputs},
      {"conv_transpose2d", r::inputs},                 {"upsample_bilinear", r::none}};
  for (const auto& [name, reads] : table)
    if (name == op) return reads;
  FAIL("op " << op << " is not in the op reference");
  return r::both;
}

}  // namespace

TEST_CASE("ImageNet models have torchvision's parameter counts exactly") {
  // torchvision's num_params (the Weights meta of each model builder); every
  // parameter counted, Inception v3's auxiliary classifier included.
  const std::vector<std::pair<std::string, std::uint64_t>> torchvision{
      {"alexnet", 61100840},     {"vgg11", 132863336},       {"vgg13", 133047848},       {"vgg16", 138357544},
      {"vgg19", 143667240},      {"resnet18", 11689512},     {"resnet34", 21797672},     {"resnet50", 25557032},
      {"resnet101", 44549160},   {"resnet152", 60192808},    {"densenet121", 7978856},   {"densenet161", 28681000},
      {"densenet169", 14149480}, {"densenet201", 20013928},  {"inception-v3", 27161264},
  };
  for (const auto& [name, count] : torchvision) {
    CAPTURE(name);
    const remat::graph g = zoo::build(name);
    CHECK(parameter_elements(g) == count);
    CHECK(zoo::find_model(name).published_parameters == count);
    CHECK(zoo::find_model(name).published_rounding == 1);
  }
}

TEST_CASE("NAS networks land on their papers' parameter counts to 0.1M") {
  // Counted as DARTS' count_parameters_in_MB counts: every parameter except the
  // auxiliary head's. Papers: NASNet-A 3.3M, AmoebaNet-A 3.2M, DARTS (2nd order) 3.3M.
  const std::vector<std::pair<std::string, double>> papers{
      {"nasnet-cifar10", 3.3}, {"amoebanet-cifar10", 3.2}, {"darts-cifar10", 3.3}};
  for (const auto& [name, millions] : papers) {
    CAPTURE(name);
    const remat::graph g = zoo::build(name);
    const double counted = static_cast<double>(parameter_elements(g, "auxiliary_head.")) / 1e6;
    CHECK(std::round(counted * 10) / 10 == doctest::Approx(millions));
    CHECK(parameter_elements(g) > parameter_elements(g, "auxiliary_head."));  // the head is there
  }
  // DARTS_V2 at C = 36 with 20 cells is the network the DARTS paper evaluates.
  CHECK(parameter_elements(zoo::build("darts-cifar10"), "auxiliary_head.") == 3349342);
}

TEST_CASE("ResNet-50 at the seed's 64x3x224x224: every stage's output") {
  const remat::graph g = zoo::build("resnet50");  // the OGC table's input size
  // conv1 7x7/2 p3: (224+6-7)/2+1 = 112; maxpool 3/2 p1: (112+2-3)/2+1 = 56; layer2-4 halve it: 28, 14, 7.
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>> stages{
      {"input", {64, 3, 224, 224}},        {"conv1", {64, 64, 112, 112}},         {"relu", {64, 64, 112, 112}},
      {"maxpool", {64, 64, 56, 56}},       {"layer1.2.relu_out", {64, 256, 56, 56}}, {"layer2.3.relu_out", {64, 512, 28, 28}},
      {"layer3.5.relu_out", {64, 1024, 14, 14}}, {"layer4.2.relu_out", {64, 2048, 7, 7}}, {"avgpool", {64, 2048, 1, 1}},
      {"flatten", {64, 2048}},             {"fc", {64, 1000}},                    {"loss", {1}},
  };
  for (const auto& [stage, expected] : stages) {
    CAPTURE(stage);
    CHECK(shape_of(g, stage) == expected);
  }
}

TEST_CASE("Inception v3 at the seed's 32x3x300x300: every stage's output") {
  const remat::graph g = zoo::build("inception-v3");
  // out = floor((in + 2p - k) / s) + 1:
  //   Conv2d_1a 3x3/2: (300-3)/2+1 = 149; Conv2d_2a 3x3: 147; Conv2d_2b 3x3 p1: 147;
  //   maxpool1 3/2: (147-3)/2+1 = 73; Conv2d_3b 1x1: 73; Conv2d_4a 3x3: 71; maxpool2 3/2: (71-3)/2+1 = 35;
  //   Mixed_5* keep 35; Mixed_6a 3x3/2: (35-3)/2+1 = 17; Mixed_6* keep 17; Mixed_7a 3x3/2: (17-3)/2+1 = 8.
  // Channels: 5b 64+64+96+32 = 256; 5c, 5d 64+64+96+64 = 288; 6a 384+96+288 = 768;
  //   6b-6e 4 x 192 = 768; 7a 320+192+768 = 1280; 7b, 7c 320+768+768+192 = 2048.
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>> stages{
      {"input", {32, 3, 300, 300}},           {"Conv2d_1a_3x3.relu", {32, 32, 149, 149}},
      {"Conv2d_2a_3x3.relu", {32, 32, 147, 147}}, {"Conv2d_2b_3x3.relu", {32, 64, 147, 147}},
      {"maxpool1", {32, 64, 73, 73}},         {"Conv2d_3b_1x1.relu", {32, 80, 73, 73}},
      {"Conv2d_4a_3x3.relu", {32, 192, 71, 71}}, {"maxpool2", {32, 192, 35, 35}},
      {"Mixed_5b.concat", {32, 256, 35, 35}}, {"Mixed_5c.concat", {32, 288, 35, 35}},
      {"Mixed_5d.concat", {32, 288, 35, 35}}, {"Mixed_6a.concat", {32, 768, 17, 17}},
      {"Mixed_6b.concat", {32, 768, 17, 17}}, {"Mixed_6c.concat", {32, 768, 17, 17}},
      {"Mixed_6d.concat", {32, 768, 17, 17}}, {"Mixed_6e.concat", {32, 768, 17, 17}},
      {"Mixed_7a.concat", {32, 1280, 8, 8}},  {"Mixed_7b.concat", {32, 2048, 8, 8}},
      {"Mixed_7c.concat", {32, 2048, 8, 8}},  {"avgpool", {32, 2048, 1, 1}},
      {"flatten", {32, 2048}},                {"fc", {32, 1000}},
  };
  for (const auto& [stage, expected] : stages) {
    CAPTURE(stage);
    CHECK(shape_of(g, stage) == expected);
  }
  // The auxiliary classifier: avg_pool 5/3 on 17x17 gives (17-5)/3+1 = 5, conv1 5x5 gives 1x1.
  CHECK(shape_of(g, "AuxLogits.conv1.relu") == std::vector<std::int64_t>{32, 768, 1, 1});
}

TEST_CASE("GoogLeNet at Kusumoto et al.'s 32x3x224x224: every stage's output as torchvision's, three losses") {
  const remat::graph g = zoo::build("googlenet");
  // torchvision's googlenet in training mode, shapes read off forward hooks:
  // max pools 3/2 with ceil mode 112 -> 56 -> 28 -> 14, 2/2 14 -> 7; channels
  // 3a 64+128+32+32 = 256, 3b 480, 4a-4c 512, 4d 528, 4e 832, 5a 832, 5b 1024.
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>> stages{
      {"input", {32, 3, 224, 224}},        {"conv1.relu", {32, 64, 112, 112}},
      {"maxpool1", {32, 64, 56, 56}},       {"conv3.relu", {32, 192, 56, 56}},
      {"maxpool2", {32, 192, 28, 28}},      {"inception3a.concat", {32, 256, 28, 28}},
      {"inception3b.concat", {32, 480, 28, 28}}, {"maxpool3", {32, 480, 14, 14}},
      {"inception4a.concat", {32, 512, 14, 14}}, {"aux1.conv.relu", {32, 128, 4, 4}},
      {"inception4d.concat", {32, 528, 14, 14}}, {"inception4e.concat", {32, 832, 14, 14}},
      {"maxpool4", {32, 832, 7, 7}},        {"inception5b.concat", {32, 1024, 7, 7}},
      {"avgpool", {32, 1024, 1, 1}},        {"fc", {32, 1000}},
  };
  for (const auto& [stage, expected] : stages) {
    CAPTURE(stage);
    CHECK(shape_of(g, stage) == expected);
  }
  for (const char* loss : {"loss", "aux1_loss", "aux2_loss"}) {
    CAPTURE(loss);
    const auto v = g.find(loss);
    REQUIRE(v);
    CHECK(g.successors(*v).empty());
    CHECK(std::get<double>(g.attrs(*v).at("loss_weight")) == (std::string(loss) == "loss" ? 1.0 : 0.3));
  }
}

TEST_CASE("U-Net at Kusumoto et al.'s 8x1x572x572: Ronneberger et al.'s maps, a per-pixel loss over 388x388") {
  const remat::graph g = zoo::build("unet");
  // Fig. 1 of Ronneberger et al.: valid convolutions take 2 pixels a side,
  // up-convolutions double the map, the skips are cropped to it.
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>> stages{
      {"input", {8, 1, 572, 572}},          {"down1.relu2", {8, 64, 568, 568}},   {"pool1", {8, 64, 284, 284}},
      {"down2.relu2", {8, 128, 280, 280}},  {"down3.relu2", {8, 256, 136, 136}},  {"down4.relu2", {8, 512, 64, 64}},
      {"bottom.relu2", {8, 1024, 28, 28}},  {"up4.upconv", {8, 512, 56, 56}},     {"up4.crop", {8, 512, 56, 56}},
      {"up4.concat", {8, 1024, 56, 56}},    {"up4.relu2", {8, 512, 52, 52}},      {"up3.upconv", {8, 256, 104, 104}},
      {"up2.relu2", {8, 128, 196, 196}},    {"up1.upconv", {8, 64, 392, 392}},    {"up1.crop", {8, 64, 392, 392}},
      {"head", {8, 2, 388, 388}},           {"labels", {8, 388, 388}},            {"loss", {1}},
  };
  for (const auto& [stage, expected] : stages) {
    CAPTURE(stage);
    CHECK(shape_of(g, stage) == expected);
  }
  // The crop takes the centre: (568 − 392) / 2 = 88 pixels off each side.
  const auto crop = g.find("up1.crop");
  REQUIRE(crop);
  CHECK(std::get<std::vector<std::int64_t>>(g.attrs(*crop).at("begin")) == std::vector<std::int64_t>{0, 0, 88, 88});
  CHECK(g.op(*g.find("up1.upconv")) == "conv_transpose2d");
  CHECK(parameter_elements(g) == zoo::find_model("unet").published_parameters);
}

TEST_CASE("PSPNet at Kusumoto et al.'s 1x3x713x713: output stride 8, the pyramid, two per-pixel losses") {
  const remat::graph g = zoo::build("pspnet");
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>> stages{
      {"input", {1, 3, 713, 713}},                       {"backbone.relu", {1, 64, 357, 357}},
      {"backbone.maxpool", {1, 64, 179, 179}},           {"backbone.layer1.2.relu_out", {1, 256, 179, 179}},
      {"backbone.layer2.3.relu_out", {1, 512, 90, 90}},  {"backbone.layer3.22.relu_out", {1, 1024, 90, 90}},
      {"backbone.layer4.2.relu_out", {1, 2048, 90, 90}}, {"ppm.features.0.0", {1, 2048, 1, 1}},
      {"ppm.features.3.0", {1, 2048, 6, 6}},             {"ppm.features.3.upsample", {1, 512, 90, 90}},
      {"ppm.concat", {1, 4096, 90, 90}},                 {"cls.4", {1, 19, 90, 90}},
      {"upsample", {1, 19, 713, 713}},                   {"aux.upsample", {1, 19, 713, 713}},
      {"labels", {1, 713, 713}},
  };
  for (const auto& [stage, expected] : stages) {
    CAPTURE(stage);
    CHECK(shape_of(g, stage) == expected);
  }
  // torchvision's replace_stride_with_dilation: the first block of a dilated
  // stage keeps the previous dilation.
  auto dilation = [&](const char* node) { return std::get<std::vector<std::int64_t>>(g.attrs(*g.find(node)).at("dilation"))[0]; };
  CHECK(dilation("backbone.layer3.0.conv2") == 1);
  CHECK(dilation("backbone.layer3.1.conv2") == 2);
  CHECK(dilation("backbone.layer4.0.conv2") == 2);
  CHECK(dilation("backbone.layer4.2.conv2") == 4);
  CHECK(std::get<std::int64_t>(g.attrs(*g.find("upsample")).at("align_corners")) == 1);
  CHECK(std::get<double>(g.attrs(*g.find("aux_loss")).at("loss_weight")) == 0.4);
  CHECK(parameter_elements(g) == zoo::find_model("pspnet").published_parameters);
}

TEST_CASE("models with an auxiliary classifier have two weighted losses, both sinks") {
  for (const char* name : {"inception-v3", "darts-cifar10", "pspnet"}) {
    CAPTURE(name);
    const remat::graph g = zoo::build(name);
    const auto main = g.find("loss"), aux = g.find("aux_loss");
    REQUIRE(main);
    REQUIRE(aux);
    CHECK(std::get<double>(g.attrs(*main).at("loss_weight")) == 1.0);
    CHECK(std::get<double>(g.attrs(*aux).at("loss_weight")) == 0.4);
    std::size_t sinks = 0;
    for (std::size_t v = 0; v < g.size(); ++v)
      if (!g.is_input(v) && g.successors(v).empty()) {
        ++sinks;
        CHECK(g.op(v) == "softmax_cross_entropy");
      }
    CHECK(sinks == 2);
  }
}

TEST_CASE("every node follows the op reference") {
  for (const zoo::model_info& m : zoo::models()) {
    CAPTURE(m.name);
    const remat::graph g = zoo::build(m.name, sized(2, zoo::dtype::f16, "a100"));
    CHECK(g.name() == m.name);
    for (std::size_t v = 0; v < g.size(); ++v) {
      CAPTURE(g.node_name(v));
      const auto& attrs = g.attrs(v);
      const auto& dims = std::get<std::vector<std::int64_t>>(attrs.at("shape"));
      const auto& type = std::get<std::string>(attrs.at("dtype"));
      std::uint64_t count = 1;
      for (std::int64_t d : dims) count *= static_cast<std::uint64_t>(d);
      CHECK(g.bytes(v) == count * (type == "i64" ? 8 : 2));
      CHECK((type == "f16" || (type == "i64" && g.node_name(v) == "labels")));
      CHECK(g.reads(v) == contract(g.op(v)));
      if (!g.is_input(v)) {
        CHECK(g.time(v) > 0);
        CHECK(g.backward_time(v) > 0);
      }
      CHECK(g.workspace(v) == 0);
    }
    CHECK(g.find("input"));
    CHECK(g.find("labels"));
  }
}

TEST_CASE("build options scale bytes and times") {
  const remat::graph base = zoo::build("resnet18");
  const remat::graph bigger = zoo::build("resnet18", sized(512));
  const remat::graph half = zoo::build("resnet18", sized(0, zoo::dtype::bf16));
  const remat::graph slow = zoo::build("resnet18", sized(0, zoo::dtype::f32, "rtx2080ti"));
  const auto conv1 = *base.find("conv1");
  CHECK(bigger.bytes(conv1) == 2 * base.bytes(conv1));  // default batch 256
  CHECK(half.bytes(conv1) * 2 == base.bytes(conv1));
  CHECK(half.param_bytes() * 2 == base.param_bytes());
  CHECK(slow.forward_time() > base.forward_time());
  CHECK(shape_of(zoo::build("resnet18", sized(1, zoo::dtype::f32, "h100", 160, 128)),
                 "layer4.1.relu_out") == std::vector<std::int64_t>{1, 512, 5, 4});
}

TEST_CASE("the model list carries the OGC table's default sizes") {
  REQUIRE(zoo::models().size() == 21);
  CHECK(zoo::find_model("unet").batch == 8);
  CHECK(zoo::find_model("pspnet").height == 713);
  CHECK(zoo::find_model("googlenet").batch == 32);
  CHECK(zoo::find_model("alexnet").batch == 1024);
  CHECK(zoo::find_model("resnet152").batch == 16);
  CHECK(zoo::find_model("inception-v3").height == 300);
  CHECK(zoo::find_model("darts-cifar10").width == 32);
  const remat::graph g = zoo::build("densenet201");
  CHECK(shape_of(g, "input") == std::vector<std::int64_t>{16, 3, 224, 224});
}

TEST_CASE("bad requests are refused with a reason") {
  CHECK_THROWS_WITH_AS(zoo::build("resnet51"), doctest::Contains("unknown model 'resnet51' (known: alexnet, vgg11"),
                       remat::error);
  CHECK_THROWS_WITH_AS(zoo::build("resnet50", sized(0, zoo::dtype::f32, "tpu")),
                       doctest::Contains("unknown device profile 'tpu' (known: h100, a100, rtx2080ti)"), remat::error);
  CHECK_THROWS_WITH_AS(zoo::build("vgg11", sized(1, zoo::dtype::f32, "h100", 16, 16)),
                       doctest::Contains("node 'features.20'"), remat::error);
  CHECK_THROWS_WITH_AS(zoo::build("darts-cifar10", sized(1, zoo::dtype::f32, "h100", 64, 64)),
                       doctest::Contains("auxiliary head needs an 8×8 map"), remat::error);
}

TEST_CASE("regular training and the per-op floor run on every model") {
  for (const zoo::model_info& m : zoo::models()) {
    CAPTURE(m.name);
    const remat::graph g = zoo::build(m.name, sized(4));
    const remat::simulation regular = remat::simulate(g, remat::plan_none(g).steps);
    CHECK(remat::per_op_floor(g).bytes <= regular.peak_bytes);
    CHECK(regular.peak_bytes > g.param_bytes() * 2);
  }
}

TEST_CASE("an exported model reads back to the same bytes") {
  const std::string text = remat::io::write_graph_json(zoo::build("inception-v3", sized(2)));
  CHECK(remat::io::write_graph_json(remat::io::read_graph_json(text, "inception.json")) == text);
}
