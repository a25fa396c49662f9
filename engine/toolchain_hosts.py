"""Package indexes and toolchain downloads: the tooling, not the world (passed through by default).

A rollout's runtime bootstraps itself — `uv sync` of a harness script, `npm install` of an agent,
a Python build from a GitHub release — through the same proxy as its tool calls. Recorded, those
hundreds of reads fill the tape with bytes no reward depends on and, once the tape is sealed,
refuse the next group's bootstrap. Passed through (decision `passthrough`, counted in the report),
they stay off the tape while a sealed tape still refuses them: nothing goes live once sealed.
A tape that does want them recorded sets `toolchain_passthrough: false`.
"""

from __future__ import annotations

TOOLCHAIN_HOSTS = frozenset(
    {
        # Python: PyPI and its file host; uv's installer; PyTorch's wheel index.
        "pypi.org",
        "files.pythonhosted.org",
        "astral.sh",
        "download.pytorch.org",
        # JavaScript
        "registry.npmjs.org",
        "registry.yarnpkg.com",
        "nodejs.org",
        # GitHub release assets (where github.com/…/releases/download/… redirects)
        "objects.githubusercontent.com",
        "release-assets.githubusercontent.com",
        # Rust, Go
        "crates.io",
        "index.crates.io",
        "static.crates.io",
        "static.rust-lang.org",
        "proxy.golang.org",
        "sum.golang.org",
        # Conda
        "conda.anaconda.org",
        "repo.anaconda.com",
        # System packages inside a sandbox image
        "deb.debian.org",
        "security.debian.org",
        "archive.ubuntu.com",
        "security.ubuntu.com",
        "dl-cdn.alpinelinux.org",
    }
)

# github.com is also an API a world may use; only its release downloads are tooling.
_GITHUB_RELEASE_HOST = "github.com"
_GITHUB_RELEASE_PATH = "/releases/download/"


def is_toolchain_download(host: str, path: str) -> bool:
    """Whether a request to `host` (lowercased, no port) at `path` fetches a package or tool."""
    if host in TOOLCHAIN_HOSTS:
        return True
    return host == _GITHUB_RELEASE_HOST and _GITHUB_RELEASE_PATH in path
