"""pip's build of nsverify: the extension `_nsverify` and the `nsv` executable come from the project's
CMake build (python/CMakeLists.txt), configured for the interpreter running pip (sys.executable), in
build/pip-<interpreter tag>/ (kept, so that a second `pip install .` is incremental). The metadata is
in pyproject.toml.

Environment: NSV_PIP_BUILD_DIR (the CMake build folder), NSV_PIP_JOBS (parallel compile jobs, default 2),
CMAKE_ARGS (extra CMake arguments, e.g. -DNSV_WITH_CUDA=OFF).
"""

import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        tag = sysconfig.get_config_var("SOABI") or f"py{sys.version_info[0]}{sys.version_info[1]}"
        build_dir = pathlib.Path(os.environ.get("NSV_PIP_BUILD_DIR", ROOT / "build" / f"pip-{tag}"))
        build_dir.mkdir(parents=True, exist_ok=True)
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        launcher = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"] if shutil.which("ccache") else []
        configure = ["cmake", "-S", str(ROOT), "-B", str(build_dir), *generator, "-DCMAKE_BUILD_TYPE=Release",
                     f"-DPython_EXECUTABLE={sys.executable}", *launcher, *shlex.split(os.environ.get("CMAKE_ARGS", ""))]
        jobs = os.environ.get("NSV_PIP_JOBS", "2")
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_nsverify", "nsv", "-j", jobs], check=True)
        built = build_dir / "python" / "nsverify"
        modules = sorted(built.glob("_nsverify*.so"))
        if not modules:
            raise RuntimeError(f"the CMake build made no _nsverify module in {built} (is pybind11-dev installed?)")
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(modules[-1], target)
        # the C++ command line, beside the package: nsverify/_nsv.py runs it for every command but `check`
        binary = build_dir / "cli" / "nsv"
        if binary.is_file():
            (target.parent / "bin").mkdir(exist_ok=True)
            shutil.copy2(binary, target.parent / "bin" / "nsv")


setup(ext_modules=[CMakeExtension("nsverify._nsverify")], cmdclass={"build_ext": CMakeBuild},
      package_data={"nsverify": ["bin/nsv"]})
