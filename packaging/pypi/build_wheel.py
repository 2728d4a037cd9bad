#!/usr/bin/env python3
"""Builds the PyPI wheel fake-gemini for one platform from built binaries: fake-gemini,
fake-gemini-api and gemini-mcp-conformance go into the wheel's scripts, so pip installs each
binary itself as a command (no Python launcher in front of it).

    python3 packaging/pypi/build_wheel.py --out DIR PLATFORM=BINDIR

PLATFORM is one of linux-x64, linux-arm64, linux-x64-musl, linux-arm64-musl, darwin-x64,
darwin-arm64, win32-x64 (the npm packages' names); BINDIR holds the three binaries (.exe on Windows). The wheel takes the version
of the fake-gemini crate. A Linux wheel is tagged manylinux_2_N, N the newest glibc symbol
version the binaries need. Only the standard library is used; the wheel's path is printed.
"""

import argparse
import base64
import hashlib
import re
import stat
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARIES = ["fake-gemini", "fake-gemini-api", "gemini-mcp-conformance"]
# Rust's oldest supported macOS per architecture.
PLATFORMS = {
    "linux-x64": ("linux", "x86_64"),
    "linux-arm64": ("linux", "aarch64"),
    # Static musl builds: no libc symbol to version; musllinux_1_2 is what pip on musl accepts.
    "linux-x64-musl": ("musllinux_1_2", "x86_64"),
    "linux-arm64-musl": ("musllinux_1_2", "aarch64"),
    "darwin-x64": ("macosx_10_12", "x86_64"),
    "darwin-arm64": ("macosx_11_0", "arm64"),
    "win32-x64": ("win", "amd64"),
}
SUMMARY = (
    "A scriptable stand-in for Google's Gemini CLI 0.61 and the gemini-mcp-conformance suite, "
    "for testing Gemini wrappers"
)
# A fixed time for every entry, so the same binaries give the same wheel.
EPOCH = (1980, 1, 1, 0, 0, 0)


def crate_version(manifest):
    text = (ROOT / manifest).read_text(encoding="utf-8")
    package = next((s for s in re.split(r"^\[", text, flags=re.M) if s.startswith("package]")), "")
    m = re.search(r'^version\s*=\s*"([^"]+)"', package, flags=re.M)
    if not m:
        raise SystemExit(f"{manifest}: no [package] version")
    return m.group(1)


def glibc_needed(files):
    """The newest GLIBC_2.N symbol version the ELF files name (N), at least 17."""
    newest = 17
    for f in files:
        for m in re.finditer(rb"GLIBC_2\.(\d+)", f.read_bytes()):
            newest = max(newest, int(m.group(1)))
    return newest


def platform_tag(platform, files):
    system, arch = PLATFORMS[platform]
    if system == "linux":
        return f"manylinux_2_{glibc_needed(files)}_{arch}"
    return f"{system}_{arch}"


def digest(data):
    raw = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def metadata(version):
    readme = (Path(__file__).parent / "README.md").read_text(encoding="utf-8")
    return (
        "Metadata-Version: 2.1\n"
        "Name: fake-gemini\n"
        f"Version: {version}\n"
        f"Summary: {SUMMARY}\n"
        "License: MIT\n"
        "Keywords: gemini,gemini-cli,testing,fake,mcp,conformance\n"
        "Classifier: License :: OSI Approved :: MIT License\n"
        "Classifier: Topic :: Software Development :: Testing\n"
        "Requires-Python: >=3.8\n"
        "Description-Content-Type: text/markdown\n"
        "\n" + readme
    )


def build(out, platform, bindir):
    version = crate_version("fake-gemini/Cargo.toml")
    suite = crate_version("conformance/Cargo.toml")
    if suite != version:
        raise SystemExit(f"fake-gemini is {version} but gemini-mcp-conformance is {suite}")
    if not re.fullmatch(r"\d+(\.\d+)*", version):
        raise SystemExit(f"version {version} is not a plain release version (PEP 440)")
    exe = ".exe" if platform.startswith("win32") else ""
    binaries = [bindir / f"{b}{exe}" for b in BINARIES]
    tag = f"py3-none-{platform_tag(platform, binaries)}"
    dist = f"fake_gemini-{version}"
    entries = [(f"{dist}.data/scripts/{b.name}", b.read_bytes(), 0o755) for b in binaries]
    entries += [
        (f"{dist}.dist-info/METADATA", metadata(version).encode(), 0o644),
        (f"{dist}.dist-info/LICENSE", (ROOT / "LICENSE").read_bytes(), 0o644),
        (
            f"{dist}.dist-info/WHEEL",
            f"Wheel-Version: 1.0\nGenerator: build_wheel.py\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(),
            0o644,
        ),
    ]
    record = f"{dist}.dist-info/RECORD"
    lines = [f"{name},{digest(data)},{len(data)}" for name, data, _ in entries] + [f"{record},,"]
    entries.append((record, ("\n".join(lines) + "\n").encode(), 0o644))
    out.mkdir(parents=True, exist_ok=True)
    wheel = out / f"{dist}-{tag}.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name, date_time=EPOCH)
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return wheel


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="where the wheel is written")
    parser.add_argument("binaries", metavar="PLATFORM=BINDIR", help="the platform and its binaries")
    args = parser.parse_args()
    platform, _, bindir = args.binaries.partition("=")
    if platform not in PLATFORMS or not bindir:
        raise SystemExit(f"expected PLATFORM=BINDIR, PLATFORM one of {', '.join(PLATFORMS)}")
    print(build(args.out.resolve(), platform, Path(bindir).resolve()))


if __name__ == "__main__":
    sys.exit(main())
