#!/usr/bin/env python3
"""Builds a product's PyPI wheel for one platform from built binaries: `geminicli-mcp` (the
server) or `fake-gemini` (fake-gemini, fake-gemini-api and gemini-mcp-conformance). The binaries go
into the wheel's scripts, so pip (or uvx) installs each binary itself as a command, with no Python
launcher in front of it.

    python3 packaging/pypi/build_wheel.py --out DIR [--product NAME] PLATFORM=BINDIR

PLATFORM is one of linux-x64, linux-arm64, linux-x64-musl, linux-arm64-musl, darwin-x64,
darwin-arm64, win32-x64 (the npm packages' names); BINDIR holds the product's binaries (.exe on Windows). --product defaults to
fake-gemini. The wheel takes the version of the product's crates. A Linux wheel is tagged manylinux_2_N, N the newest glibc symbol
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
# What each product's wheel holds and says; its README is packaging/pypi/README-<product>.md.
PRODUCTS = {
    "geminicli-mcp": {
        "crates": ["Cargo.toml"],
        "binaries": ["geminicli-mcp"],
        "summary": "MCP server that lets any MCP client use Google's headless Gemini CLI as a supervised tool",
        "keywords": "mcp,mcp-server,gemini,gemini-cli,model-context-protocol",
        "topic": "Software Development",
        # Its folder in the repository and its documentation there.
        "folder": "",
        "documentation": "docs",
    },
    "fake-gemini": {
        "crates": ["fake-gemini/Cargo.toml", "conformance/Cargo.toml"],
        "binaries": ["fake-gemini", "fake-gemini-api", "gemini-mcp-conformance"],
        "summary": "A scriptable stand-in for Google's Gemini CLI 0.61 and the gemini-mcp-conformance "
        "suite, for testing Gemini wrappers",
        "keywords": "gemini,gemini-cli,testing,fake,mcp,conformance",
        "topic": "Software Development :: Testing",
        "folder": "fake-gemini",
        "documentation": "fake-gemini/README.md",
    },
}
# A fixed time for every entry, so the same binaries give the same wheel.
EPOCH = (1980, 1, 1, 0, 0, 0)


def workspace_repository():
    """The repository every wheel links to: the workspace's `repository` (Cargo.toml)."""
    text = (ROOT / "Cargo.toml").read_text(encoding="utf-8")
    table = next((s for s in re.split(r"^\[", text, flags=re.M) if s.startswith("workspace.package]")), "")
    m = re.search(r'^repository\s*=\s*"([^"]+)"', table, flags=re.M)
    if not m:
        raise SystemExit("Cargo.toml: no [workspace.package] repository")
    return m.group(1)


def project_urls(product):
    """The wheel's links on PyPI's page: its home (the product's README), the source, the
    documentation and the issue tracker."""
    p = PRODUCTS[product]
    repo = workspace_repository()
    home = f"{repo}/tree/main/{p['folder']}#readme" if p["folder"] else f"{repo}#readme"
    docs = p["documentation"]
    kind = "blob" if docs.endswith(".md") else "tree"
    return [
        ("Homepage", home),
        ("Source", repo),
        ("Documentation", f"{repo}/{kind}/main/{docs}"),
        ("Issues", f"{repo}/issues"),
    ]


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


def metadata(product, version):
    p = PRODUCTS[product]
    readme = (Path(__file__).parent / f"README-{product}.md").read_text(encoding="utf-8")
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {product}\n"
        f"Version: {version}\n"
        f"Summary: {p['summary']}\n"
        "License: MIT\n"
        f"Keywords: {p['keywords']}\n"
        "Classifier: License :: OSI Approved :: MIT License\n"
        f"Classifier: Topic :: {p['topic']}\n"
        + "".join(f"Project-URL: {label}, {url}\n" for label, url in project_urls(product))
        + "Requires-Python: >=3.8\n"
        "Description-Content-Type: text/markdown\n"
        "\n" + readme
    )


def product_version(product):
    first, *rest = PRODUCTS[product]["crates"]
    version = crate_version(first)
    for manifest in rest:
        other = crate_version(manifest)
        if other != version:
            raise SystemExit(f"{first} is {version} but {manifest} is {other}: one version per package")
    return version


def build(out, product, platform, bindir):
    version = product_version(product)
    if not re.fullmatch(r"\d+(\.\d+)*", version):
        raise SystemExit(f"version {version} is not a plain release version (PEP 440)")
    exe = ".exe" if platform.startswith("win32") else ""
    binaries = [bindir / f"{b}{exe}" for b in PRODUCTS[product]["binaries"]]
    for b in binaries:
        if not b.is_file():
            raise SystemExit(f"{b} is missing (the {product} wheel needs {', '.join(PRODUCTS[product]['binaries'])})")
    tag = f"py3-none-{platform_tag(platform, binaries)}"
    dist = f"{product.replace('-', '_')}-{version}"
    entries = [(f"{dist}.data/scripts/{b.name}", b.read_bytes(), 0o755) for b in binaries]
    entries += [
        (f"{dist}.dist-info/METADATA", metadata(product, version).encode(), 0o644),
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
    parser.add_argument("--product", default="fake-gemini", choices=sorted(PRODUCTS), help="the product")
    parser.add_argument("binaries", metavar="PLATFORM=BINDIR", help="the platform and its binaries")
    args = parser.parse_args()
    platform, _, bindir = args.binaries.partition("=")
    if platform not in PLATFORMS or not bindir:
        raise SystemExit(f"expected PLATFORM=BINDIR, PLATFORM one of {', '.join(PLATFORMS)}")
    print(build(args.out.resolve(), args.product, platform, Path(bindir).resolve()))


if __name__ == "__main__":
    sys.exit(main())
