// `tessera keys generate --output DIR [--name NAME] [--role worker|client]`: a
// CURVE keypair for a tracker, a worker or a client (rpc/keys.h).
#include <cstdio>

#include "rpc/keys.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace tessera::cli {

int run_keys(int argc, char** argv, int first) {
  const std::vector<OptionSpec> specs = {
      {"output", true, "directory for NAME.key (secret) and NAME.pub (public); created with mode 0700", 'o', "DIR"},
      {"name", true, "the keypair's name (default: tessera)"},
      {"role", true, "worker or client: written into both files; the tracker admits the key only in that role"},
      {"help", false, "this text"},
  };
  auto args = Args::parse(argc, argv, first, specs);
  const bool help = args.is_ok() && args->has("help");
  if (!args.is_ok() || help || args->positional().size() != 1 || args->positional()[0] != "generate" ||
      !args->has("output")) {
    if (!args.is_ok()) std::fprintf(stderr, "tessera keys: %s\n\n", args.status().message().c_str());
    std::fprintf(help ? stdout : stderr,
                 "usage: tessera keys generate --output DIR [--name NAME] [--role worker|client]\n\n"
                 "Writes a CURVE keypair (Z85) as DIR/NAME.key and DIR/NAME.pub, mode 0600.\n"
                 "Give NAME.pub to the other side: the tracker lists its workers' public keys in\n"
                 "DIR/workers/ and its clients' in DIR/clients/ (--authorized DIR), they name\n"
                 "the tracker's (--tracker-key). A .pub directly in DIR has the role its\n"
                 "'role =' line names; without one (keys from before roles) it may do both.\n\n%s",
                 format_options(specs).c_str());
    return help ? 0 : 2;
  }
  auto keys = rpc::generate_keypair();
  if (!keys.is_ok()) {
    std::fprintf(stderr, "tessera keys: %s\n", keys.status().message().c_str());
    return 1;
  }
  const std::string dir = args->get("output"), name = args->get("name", "tessera");
  rpc::KeyRole role = rpc::KeyRole::kAny;
  if (args->has("role")) {
    auto parsed = rpc::parse_key_role(args->get("role"));
    if (!parsed.is_ok()) {
      std::fprintf(stderr, "tessera keys: %s\n", parsed.status().message().c_str());
      return 2;
    }
    role = *parsed;
  }
  Status written = rpc::write_keypair(dir, name, *keys, role);
  if (!written.is_ok()) {
    std::fprintf(stderr, "tessera keys: %s\n", written.message().c_str());
    return 1;
  }
  std::printf("wrote %s/%s.key (secret) and %s/%s.pub\npublic key: %s\nrole: %s\n", dir.c_str(), name.c_str(),
              dir.c_str(), name.c_str(), keys->public_z85.c_str(),
              role == rpc::KeyRole::kAny ? "none (worker and client; give --role)" : rpc::key_role_name(role));
  return 0;
}

}  // namespace tessera::cli
