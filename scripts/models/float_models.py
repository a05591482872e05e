"""The float models the converters start from (quantize_dynamic.py,
float16.py): the generators' own arguments on a command line, checked, and
the model they name — a generator here (resnet18, convnet, transformer) or
an .onnx file."""
import onnx


def add_arguments(parser):
    """--model and the generators' size arguments."""
    parser.add_argument("--model", required=True,
                        help="convnet, transformer, resnet18, or the path of a float .onnx model")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated model's weights (default 0)")
    parser.add_argument("--batch", type=int, default=1, help="batch size of the generated model (default 1)")
    parser.add_argument("--size", type=int, default=64, help="conv net: image height and width (default 64)")
    parser.add_argument("--seq", type=int, default=128, help="transformer: sequence length (default 128)")
    parser.add_argument("--layers", type=int, default=2, help="transformer: encoder layers (default 2)")
    parser.add_argument("--d-model", dest="d_model", type=int, default=256, help="transformer: width (default 256)")
    parser.add_argument("--heads", type=int, default=4, help="transformer: attention heads (default 4)")
    parser.add_argument("--ff", type=int, default=1024, help="transformer: feed-forward width (default 1024)")
    parser.add_argument("--pad", type=int, default=8, help="transformer: masked key positions (default 8)")


def check_arguments(parser, args):
    """parser.error for a size a generator cannot take."""
    for flag in ("batch", "seq", "layers", "d_model", "heads", "ff"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")
    if args.size < 8:
        parser.error("--size must be at least 8")
    if args.d_model % args.heads:
        parser.error("--d-model must be a multiple of --heads")
    if not 0 <= args.pad < args.seq:
        parser.error("--pad must be in [0, seq)")


def load(args):
    """The float model --model names (OSError for a file that cannot be read)."""
    if args.model == "convnet":
        import convnet
        return convnet.build(args.seed, args.batch, args.size)
    if args.model == "transformer":
        import transformer
        return transformer.build(args)
    if args.model == "resnet18":
        import resnet18
        return resnet18.build(args.seed, args.batch)
    return onnx.load(args.model)
