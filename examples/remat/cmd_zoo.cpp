// remat zoo list | export NAME, and remat gen KIND: graphs of known networks
// and generated graphs, written as remat JSON.

#include <iostream>

#include <remat/io/json.hpp>
#include <remat/zoo.hpp>

#include "cli.hpp"

namespace remat::cli {

namespace {

// Options every written graph shares: element type, device profile, output file.
struct target {
  std::string dtype = "f32", device = "h100", output;

  void add_to(CLI::App* cmd) {
    cmd->add_option("--dtype", dtype, "element type of values and parameters: f32 | f16 | bf16")->capture_default_str();
    cmd->add_option("--device", device, "device profile for time estimates: h100 | a100 | rtx2080ti")
        ->capture_default_str();
    cmd->add_option("-o,--output", output, "write the graph here (default: standard output)");
  }

  zoo::dtype type() const {
    if (auto t = zoo::parse_dtype(dtype)) return *t;
    throw error("unknown dtype '" + dtype + "' (known: f32, f16, bf16)");
  }

  // Checks the device name before any work is done.
  const std::string& device_name() const { return zoo::profile(device).name; }

  void write(const graph& g) const {
    const std::string text = io::write_graph_json(g);
    if (output.empty()) {
      std::cout << text;
      return;
    }
    output_files files;
    files.reserve("--output", output, {});
    files.set(output, text);
    files.commit();
    fmt::print("{}: {} nodes, {} parameter bytes, written to {}\n", g.name(), g.size(), g.param_bytes(), output);
  }
};

const CLI::Validator positive = whole_number(1);

// --image H W, or nothing.
void add_image_option(CLI::App* cmd, std::vector<std::int64_t>& image, const std::string& what) {
  cmd->add_option("--image", image, "input height and width (default: " + what + ")")
      ->expected(2)
      ->check(positive);
}

void add_zoo_list(CLI::App* zoo_cmd) {
  auto json = std::make_shared<bool>(false);
  auto* cmd = zoo_cmd->add_subcommand("list", "The models, with their default batch and image sizes");
  cmd->add_flag("--json", *json, "print JSON instead of a table");
  cmd->callback([json] {
    nlohmann::json out = nlohmann::json::array();
    if (!*json)
      fmt::print("{:<18}  {:<9}  {:>5}  {:>7}  {:>5}  {:>10}\n", "name", "family", "batch", "image", "nodes",
                 "parameters");
    for (const zoo::model_info& m : zoo::models()) {
      const graph g = zoo::build(m.name);
      const std::uint64_t parameters = g.param_bytes() / 4;  // built in f32
      if (*json)
        out.push_back({{"name", m.name}, {"family", m.family}, {"batch", m.batch}, {"height", m.height},
                       {"width", m.width}, {"nodes", g.size()}, {"parameters", parameters},
                       {"published_parameters", m.published_parameters}, {"source", m.source}});
      else
        fmt::print("{:<18}  {:<9}  {:>5}  {:>7}  {:>5}  {:>10}\n", m.name, m.family, m.batch,
                   fmt::format("{}x{}", m.height, m.width), g.size(), parameters);
    }
    if (*json) fmt::print("{}\n", out.dump(2));
  });
}

void add_zoo_export(CLI::App* zoo_cmd) {
  struct options {
    std::string name;
    std::int64_t batch = 0;
    std::vector<std::int64_t> image;
    target out;
  };
  auto opt = std::make_shared<options>();
  auto* cmd = zoo_cmd->add_subcommand("export", "Write a model's training graph as remat JSON");
  cmd->add_option("NAME", opt->name, "model name (see 'remat zoo list')")->required();
  cmd->add_option("--batch", opt->batch, "batch size (default: the model's)")->check(positive);
  add_image_option(cmd, opt->image, "the model's");
  opt->out.add_to(cmd);
  cmd->callback([opt] {
    zoo::build_options o;
    o.batch = opt->batch;
    if (!opt->image.empty()) {
      o.height = opt->image[0];
      o.width = opt->image[1];
    }
    o.type = opt->out.type();
    o.device = opt->out.device_name();
    opt->out.write(zoo::build(opt->name, o));
  });
}

void add_gen_chain(CLI::App* gen) {
  auto o = std::make_shared<zoo::chain_options>();
  auto out = std::make_shared<target>();
  auto* cmd = gen->add_subcommand("chain", "input -> linear -> relu -> linear -> ... (no loss)");
  cmd->add_option("--length", o->length, "number of ops")->check(positive)->capture_default_str();
  cmd->add_option("--batch", o->batch, "batch size")->check(positive)->capture_default_str();
  cmd->add_option("--features", o->features, "width of the input and of every op of a uniform chain")
      ->check(positive)
      ->capture_default_str();
  cmd->add_option("--max-features", o->max_features,
                  "draw each linear's width from [features, max-features] (0: uniform)")
      ->check(whole_number(0))
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed for the drawn widths")->capture_default_str();
  out->add_to(cmd);
  cmd->callback([o, out] {
    o->type = out->type();
    o->device = out->device_name();
    out->write(zoo::chain(*o));
  });
}

void add_gen_random(CLI::App* gen) {
  auto o = std::make_shared<zoo::random_dag_options>();
  auto out = std::make_shared<target>();
  auto* cmd = gen->add_subcommand("random", "A random layered DAG of linear, relu and add nodes, with a loss");
  cmd->add_option("--layers", o->layers, "layers after the input")->check(positive)->capture_default_str();
  cmd->add_option("--width", o->width, "nodes per layer")->check(positive)->capture_default_str();
  cmd->add_option("--density", o->density,
                  "probability of an edge from the previous layer (density^d from d layers back)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "random seed")->capture_default_str();
  cmd->add_option("--batch", o->batch, "batch size")->check(positive)->capture_default_str();
  cmd->add_option("--features", o->features, "width of every node")->check(positive)->capture_default_str();
  out->add_to(cmd);
  cmd->callback([o, out] {
    o->type = out->type();
    o->device = out->device_name();
    out->write(zoo::random_dag(*o));
  });
}

void add_gen_nas(CLI::App* gen) {
  auto o = std::make_shared<zoo::nas_stack_options>();
  auto out = std::make_shared<target>();
  auto image = std::make_shared<std::vector<std::int64_t>>();
  auto* cmd = gen->add_subcommand("nas", "A CIFAR network of N searched cells (DARTS' NetworkCIFAR)");
  zoo::nas_options& n = o->network;
  cmd->add_option("--cell", n.cell, "cell genotype: nasnet | amoebanet | darts")->capture_default_str();
  cmd->add_option("--cells", n.cells, "number of cells; reductions at 1/3 and 2/3")
      ->check(positive)
      ->capture_default_str();
  cmd->add_option("--channels", n.channels, "C, channels per op in the first stage")
      ->check(positive)
      ->capture_default_str();
  cmd->add_option("--batch", n.batch, "batch size")->check(positive)->capture_default_str();
  add_image_option(cmd, *image, "32 32");
  cmd->add_option("--classes", n.classes, "classes")->check(positive)->capture_default_str();
  cmd->add_flag("--aux", n.auxiliary, "add the auxiliary head (loss weight 0.4) after cell 2N/3");
  out->add_to(cmd);
  cmd->callback([o, out, image] {
    if (!image->empty()) {
      o->network.height = (*image)[0];
      o->network.width = (*image)[1];
    }
    o->type = out->type();
    o->device = out->device_name();
    out->write(zoo::nas_stack(*o));
  });
}

void add_gen_transformer(CLI::App* gen) {
  auto o = std::make_shared<zoo::transformer_options>();
  auto out = std::make_shared<target>();
  auto* cmd = gen->add_subcommand("transformer", "A stack of pre-norm Transformer blocks with a per-token loss");
  cmd->add_option("--layers", o->layers, "blocks")->check(positive)->capture_default_str();
  cmd->add_option("--batch", o->batch, "batch size")->check(positive)->capture_default_str();
  cmd->add_option("--seq", o->sequence, "sequence length")->check(positive)->capture_default_str();
  cmd->add_option("--hidden", o->hidden, "model width")->check(positive)->capture_default_str();
  cmd->add_option("--heads", o->heads, "attention heads (must divide hidden)")
      ->check(positive)
      ->capture_default_str();
  cmd->add_option("--mlp-ratio", o->mlp_ratio, "MLP width / hidden")->check(positive)->capture_default_str();
  cmd->add_option("--classes", o->classes, "classes of the per-token head")
      ->check(positive)
      ->capture_default_str();
  cmd->add_option("--dropout", o->dropout, "dropout probability (0: no dropout nodes)")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
  out->add_to(cmd);
  cmd->callback([o, out] {
    o->type = out->type();
    o->device = out->device_name();
    out->write(zoo::transformer(*o));
  });
}

}  // namespace

void add_zoo_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("zoo", "Known networks (torchvision's ImageNet models, NAS networks for CIFAR-10)");
  cmd->require_subcommand(1);
  add_zoo_list(cmd);
  add_zoo_export(cmd);
}

void add_gen_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("gen", "Generate a graph: chain, random, nas or transformer");
  cmd->require_subcommand(1);
  add_gen_chain(cmd);
  add_gen_random(cmd);
  add_gen_nas(cmd);
  add_gen_transformer(cmd);
}

}  // namespace remat::cli
