"""The `nsv` console command of an installed nsverify (pip install .): `nsv check` is nsverify.cli,
every other command the C++ `nsv` built with the package (nsverify/bin/nsv), run with the same
arguments."""

import os
import pathlib
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["check"]:
        from . import cli
        return cli.main(argv[1:])
    binary = pathlib.Path(__file__).resolve().parent / "bin" / "nsv"
    if not binary.is_file():
        print("nsv: this installation has no C++ nsv executable (nsverify/bin/nsv); only `nsv check` is available",
              file=sys.stderr)
        return 2
    os.execv(str(binary), [str(binary), *argv])


if __name__ == "__main__":
    sys.exit(main())
