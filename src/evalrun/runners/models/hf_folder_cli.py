"""`python -m evalrun.runners.models.hf_folder_cli MODEL DIR`: the folder an engine loads, from a model alias or GGUF.

    python -m evalrun.runners.models.hf_folder_cli smollm2-135m .engines/models/smollm2-135m-instruct-hf

Apart from runners/models/_hf_folder.py because it resolves the model through runners/models/_models.py, which
itself uses the writer for the in-process runner's checkpoint.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evalrun.runners.models._hf_folder import is_complete, write_hf_folder
from evalrun.runners.models._models import ModelError, quiet_transformers, resolve_model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evalrun.runners.models.hf_folder_cli",
                                     description="Write a GGUF once as a Hugging Face model folder.")
    parser.add_argument("model", help="a model alias (smollm2-135m) or a .gguf file")
    parser.add_argument("target", type=Path, help="the folder to write")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    args = parser.parse_args(argv)
    try:
        source = resolve_model(args.model)
    except ModelError as exc:
        print(f"hf_folder: {exc}", file=sys.stderr)
        return 2
    if source.kind != "gguf":
        print(f"hf_folder: {args.model!r} is not a GGUF (it is a {source.kind}): nothing to write", file=sys.stderr)
        return 2
    quiet_transformers()
    done = is_complete(args.target, source.identity, args.dtype)
    write_hf_folder(Path(source.location), args.target, source.identity, args.dtype)
    print(f"{args.target}: {'already written' if done else 'written'} from {Path(source.location).name} ({args.dtype})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
