"""Security promises: no open resolver without tokens, secrets never stored, the CA key never
served or logged, tokens compared in constant time.

A resolver reachable from a cluster network without tokens lets any pod rewrite tapes; a
stored Authorization header travels with every exported tape; a served CA key lets anyone
impersonate every site to every worker. Each check here exercises real processes on loopback
(binding 0.0.0.0 only to see the resolver refuse it, never sending traffic there) or reads the
source for how tokens are compared.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.harness import LOOPBACK, REPO_ROOT, accepting, child_environment, free_port
from bench.reliability.client import direct, through_proxy
from bench.reliability.processes import children
from bench.reliability.stack import start_stack
from bench.reliability.upstream import SECRET_COOKIE
from groundhog.lifetime import tied_command

SECRETS = {
    "authorization": "Bearer sk-live-authorization-5e1c",
    "cookie": "sid=cookie-secret-91ab",
    "x-api-key": "api-key-secret-33d0",
}
TOKEN_ENVIRONMENT = ("GROUNDHOG_ADMIN_TOKEN", "GROUNDHOG_PROXY_TOKEN")
REFUSAL_WAIT_SECONDS = 20.0
SOURCE_PACKAGES = ("resolver", "proxy", "store", "groundhog")


def check_refuses_open_bind(root: Path) -> dict[str, Any]:
    """Start the resolver on 0.0.0.0 without tokens: it must exit non-zero with a clear reason.

    If it starts listening instead, it is killed at once (by pid) and the check fails; nothing
    is ever sent to a non-loopback address (readiness is probed on 127.0.0.1 only).
    """
    port = free_port()
    environment = child_environment()
    for name in TOKEN_ENVIRONMENT:
        environment.pop(name, None)
    command = [
        sys.executable, "-m", "resolver", "--host", "0.0.0.0", "--port", str(port),
        "--data", str(root / "open-bind"),
    ]  # fmt: skip
    process = subprocess.Popen(
        tied_command(command),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=REPO_ROOT,
        env=environment,
    )
    listening = False
    deadline = time.monotonic() + REFUSAL_WAIT_SECONDS
    try:
        while process.poll() is None and time.monotonic() < deadline:
            if accepting(f"http://{LOOPBACK}:{port}"):
                listening = True
                break
            time.sleep(0.05)  # polling the child's state, not waiting for readiness
    finally:
        if process.poll() is None:
            process.kill()
        output = process.communicate(timeout=10)[0].decode(errors="replace")
    refused = not listening and process.returncode not in (None, 0, -9)
    names_fix = any(name in output for name in TOKEN_ENVIRONMENT)
    return {
        "exit_code": process.returncode,
        "listened_without_tokens": listening,
        "message": output.strip().splitlines()[-1][:300] if output.strip() else "",
        "message_names_the_fix": names_fix,
        "held": refused and names_fix,
    }


def _store_bytes(data_dir: Path) -> bytes:
    chunks = []
    for path in sorted(data_dir.glob("groundhog.sqlite3*")):
        chunks.append(path.read_bytes())
    return b"".join(chunks)


def check_secrets_and_ca(root: Path) -> dict[str, Any]:
    with children(root) as group:
        stack = start_stack(group, root)
        tape, branches = stack.open_tape("secrets", 2)
        proxy = stack.proxies[0].url
        read = through_proxy(
            proxy,
            f"{stack.upstream.url}/item/secret",
            tape=tape,
            branch=branches[0],
            headers=SECRETS,
        )
        write = through_proxy(
            proxy,
            f"{stack.upstream.url}/docs/secret",
            tape=tape,
            branch=branches[0],
            method="POST",
            content=b'{"text": "public"}',
            headers=SECRETS,
        )
        cookie = through_proxy(proxy, f"{stack.upstream.url}/cookie", tape=tape, branch=branches[0])
        sibling_cookie = through_proxy(
            proxy, f"{stack.upstream.url}/cookie", tape=tape, branch=branches[1]
        )
        seen = httpx.get(
            f"{stack.upstream.url}/_headers", params={"path": "/item/secret"}, trust_env=False
        ).text
        world_saw = read.status == 200 and all(value in seen for value in SECRETS.values())
        # The recorder is served the stored form, exactly as its siblings are (DESIGN §4):
        # the world's Set-Cookie reaches neither.
        worker_got_cookie = any(
            name.lower() == "set-cookie" and SECRET_COOKIE in value
            for name, value in cookie.headers
        )
        sibling_got_cookie = any(
            name.lower() == "set-cookie" and SECRET_COOKIE in value
            for name, value in sibling_cookie.headers
        )
        world_direct = direct("GET", f"{stack.upstream.url}/cookie")
        world_sets_cookie = any(
            name.lower() == "set-cookie" and SECRET_COOKIE in value
            for name, value in world_direct.headers
        )
        ca = direct("GET", f"{stack.resolver.url}/v1/ca.pem")
        live_files = _store_bytes(stack.data_dir)  # store, -wal and -shm while running
        stack.resolver.stop()  # the WAL is checkpointed or left behind: both files are searched
        for proxy_child in stack.proxies:
            proxy_child.stop()
        stored = live_files + _store_bytes(stack.data_dir)
        leaked = [
            name
            for name, value in [*SECRETS.items(), ("set-cookie", SECRET_COOKIE)]
            if value.encode() in stored or value.split("=")[-1].encode() in stored
        ]
        logs = "".join(child.log() for child in group.started)
        logged = [name for name, value in SECRETS.items() if value in logs]
        key_files = list((stack.data_dir / "ca").glob("*.pem")) + list(root.glob("proxy*/ca/*.pem"))
        key_on_disk = any(b"PRIVATE KEY" in path.read_bytes() for path in key_files)
        return {
            "secrets": {
                "sent": sorted([*SECRETS, "set-cookie (from the world)"]),
                "world_received_them": world_saw,
                "world_sets_cookie": world_sets_cookie,
                "recorder_received_set_cookie": worker_got_cookie,
                "sibling_received_set_cookie": sibling_got_cookie,
                "sibling_answer_status": sibling_cookie.status,
                "write_status": write.status,
                "store_bytes_searched": len(stored),
                "found_in_store": leaked,
                "found_in_logs": logged,
                "held": world_saw
                and world_sets_cookie
                and not worker_got_cookie
                and not sibling_got_cookie
                and not leaked
                and not logged,
            },
            "ca": {
                "status": ca.status,
                "serves_certificate": b"BEGIN CERTIFICATE" in ca.body,
                "serves_private_key": b"PRIVATE KEY" in ca.body,
                "private_key_exists_on_disk": key_on_disk,
                "private_key_in_logs": "PRIVATE KEY" in logs,
                "held": ca.status == 200
                and b"BEGIN CERTIFICATE" in ca.body
                and b"PRIVATE KEY" not in ca.body
                and "PRIVATE KEY" not in logs
                and key_on_disk,
            },
        }


def check_tokens(root: Path) -> dict[str, Any]:
    """With tokens set, admin and internal routes refuse a missing or wrong token."""
    admin_token, proxy_token = "admin-token-for-tests", "proxy-token-for-tests"
    environment = {"GROUNDHOG_ADMIN_TOKEN": admin_token, "GROUNDHOG_PROXY_TOKEN": proxy_token}
    with children(root) as group:
        resolver = group.start(
            "resolver-tokens",
            ["resolver", "--data", str(root / "tokens"), "--log-level", "warning"],
            env=environment,
        )
        url = resolver.url

        def status(method: str, route: str, token: str | None, **kwargs: Any) -> int | None:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            answer = direct(method, url + route, headers=headers, **kwargs)
            return answer.status

        resolve_body = {
            "tape": "t", "branch": "root", "method": "GET", "host": "h", "port": 80,
        }  # fmt: skip
        figures = {
            "admin_without_token": status("GET", "/v1/tapes", None),
            "admin_wrong_token": status("GET", "/v1/tapes", admin_token[:-1] + "X"),
            "admin_with_proxy_token": status("GET", "/v1/tapes", proxy_token),
            "admin_right_token": status("GET", "/v1/tapes", admin_token),
            "resolve_without_token": status("POST", "/v1/resolve", None, json=resolve_body),
            "resolve_with_admin_token": status(
                "POST", "/v1/resolve", admin_token, json=resolve_body
            ),
            "resolve_right_token": status("POST", "/v1/resolve", proxy_token, json=resolve_body),
            "healthz_without_token": status("GET", "/healthz", None),
        }
    figures["held"] = (
        figures["admin_without_token"] == 401
        and figures["admin_wrong_token"] == 401
        and figures["admin_with_proxy_token"] == 401
        and figures["admin_right_token"] == 200
        and figures["resolve_without_token"] == 401
        and figures["resolve_with_admin_token"] == 401
        and figures["resolve_right_token"] in (404, 422)  # past auth: tape 't' does not exist
        and figures["healthz_without_token"] == 200
    )
    return figures


def _mentions_secret(node: ast.AST) -> bool:
    text = ast.unparse(node).lower()
    return "token" in text or "secret" in text or "password" in text


def check_constant_time(root: Path = REPO_ROOT) -> dict[str, Any]:
    """No `==`/`!=` on anything named like a token; the guard uses compare_digest."""
    plain: list[str] = []
    for package in SOURCE_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if not isinstance(node, ast.Compare):
                    continue
                if not any(isinstance(op, ast.Eq | ast.NotEq) for op in node.ops):
                    continue
                operands = [node.left, *node.comparators]
                if any(isinstance(o, ast.Constant) and o.value is None for o in operands):
                    continue
                # A literal is public: `scope == "token"` names a kind, it compares no secret.
                secret_operands = [
                    o for o in operands if _mentions_secret(o) and not isinstance(o, ast.Constant)
                ]
                literal_only = all(
                    isinstance(o, ast.Constant) for o in operands if o not in secret_operands
                )
                if secret_operands and not (literal_only and _is_scheme_check(node)):
                    relative = path.relative_to(root)
                    plain.append(f"{relative}:{node.lineno}: {ast.unparse(node)}")
    auth = (root / "resolver" / "auth.py").read_text(encoding="utf-8")
    uses_digest = "compare_digest(" in auth
    return {
        "plain_comparisons": plain,
        "guard_uses_compare_digest": uses_digest,
        "held": uses_digest and not plain,
    }


def _is_scheme_check(node: ast.Compare) -> bool:
    """`scheme.lower() != "bearer"` style checks compare a public word, not a secret."""
    return all(
        isinstance(o, ast.Constant) and isinstance(o.value, str) and o.value.isalpha()
        for o in node.comparators
    )


def run_security(root: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="gh-security-") as scratch:
        base = Path(root or scratch)
        (base / "secrets").mkdir(parents=True, exist_ok=True)
        (base / "tokens").mkdir(parents=True, exist_ok=True)
        secrets_and_ca = check_secrets_and_ca(base / "secrets")
        figures = {
            "open_bind_refused": check_refuses_open_bind(base),
            **secrets_and_ca,
            "tokens": check_tokens(base / "tokens"),
            "constant_time": check_constant_time(),
        }
    figures["held"] = all(section["held"] for section in figures.values())
    return figures
