// A program outside remat that plans through <remat/remat.hpp> alone, as a
// consumer would. Exits 0 when remat::solve proves a plan optimal that needs
// less memory than regular training.

#include <cstdio>
#include <string>
#include <utility>

#include <remat/remat.hpp>

int main() {
  remat::graph_builder builder("consumer-chain");
  std::size_t last = builder.add({.name = "x", .op = "input", .bytes = 1 << 20});
  for (int i = 0; i < 16; ++i)
    last = builder.add({.name = "relu" + std::to_string(i), .op = "relu", .inputs = {last}, .bytes = 1 << 20,
                        .time = 1e-3});
  const remat::graph g = std::move(builder).build();

  const remat::solution best = remat::solve(g);
  remat::solve_options regular;
  regular.method = remat::method::none;
  const remat::solution none = remat::solve(g, regular);
  std::printf("consumer: %s, %s peak %llu bytes, regular training %llu bytes\n", g.name().c_str(),
              best.status == remat::solve_status::optimal ? "optimal" : "not optimal",
              static_cast<unsigned long long>(best.claimed_peak), static_cast<unsigned long long>(none.claimed_peak));
  return best.status == remat::solve_status::optimal && best.claimed_peak < none.claimed_peak ? 0 : 1;
}
