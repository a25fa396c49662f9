"""Write the reliability report: reliability.json (every figure) and reliability.md (the headline
figures and one line per promise, held or not).

People read the markdown to see whether Groundhog keeps its promises on their machine; tools read
the JSON. A promise that did not hold is listed first with what was measured, never hidden.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

Row = tuple[str, str, bool | None]


def _load_rows(load: dict[str, Any]) -> list[Row]:
    return [
        ("load", "soak: zero errors the world did not cause", load["errors"] == 0),
        ("load", "soak: no live call without a forward decision", load["silent_live_calls"] == 0),
        ("load", "soak: resolver and proxy memory flat", load["memory_flat"]),
    ]


def _crash_rows(crash: dict[str, Any]) -> list[Row]:
    outage, proxy, store = crash["resolver_outage"], crash["proxy_crash"], crash["store"]
    nothing_lost = store["records_lost"] == 0 and store["mismatched_records"] == 0
    one_answer = (
        store["addresses_with_two_answers"] == 0
        and store["duplicate_addresses_in_store"] == 0
        and store["served_mismatches"] == 0
    )
    outage_held = (
        outage["answered_otherwise"] == 0
        and outage["answered_503_resolver_unavailable"] > 0
        and outage["world_calls_during"] <= outage["world_calls_allowed_during"]
        and crash["silent_live_calls"] == 0
    )
    proxy_held = (
        proxy["answered_by_dead_proxy"] == 0
        and proxy["connection_errors"] > 0
        and proxy["survivor_ok_after"] > 0
    )
    intact = store["integrity"] == "ok" and store["exchanges_without_body"] == 0
    return [
        ("faults", "resolver kill -9: acknowledged records all present", nothing_lost),
        ("faults", "resolver kill -9: no address holds two answers", one_answer),
        ("faults", "resolver kill -9: outage answered 503, nothing live", outage_held),
        ("faults", "resolver restart: workers recover", outage["recovered_ok_after_restart"] > 0),
        ("faults", "proxy kill -9: connection errors, the other proxy goes on", proxy_held),
        ("faults", "store integrity after crashes", intact),
    ]


def _store_rows(store_faults: dict[str, Any]) -> list[Row]:
    full, read_only = store_faults["full_disk"], store_faults["read_only"]
    direct = full["direct_resolve_while_full"]
    return [
        ("faults", "full disk: workers get 503, nothing live, resolver survives", full["held"]),
        (
            "faults",
            "full disk: the resolver itself answers 503 problem+json",
            direct["status"] == 503 and direct["problem"],
        ),
        ("faults", "read-only store: clear refusal or 503, nothing lost", read_only.get("held")),
    ]


def _fail_closed_rows(figures: dict[str, Any]) -> list[Row]:
    freeze, reserve = figures["frozen_resolver"], figures["disk_reserve"]
    renewed, control = figures["slow_renewed"], figures["slow_unrenewed_control"]
    return [
        (
            "faults",
            f"frozen resolver: 503 in {freeze['seconds_to_answer']} s "
            f"(resolve timeout {freeze['resolve_timeout_seconds']} s), "
            f"{freeze['world_calls']} world calls",
            freeze["held"],
        ),
        (
            "faults",
            f"store below its disk reserve: {reserve['statuses']} before any live call, "
            f"{reserve['world_calls']} world calls",
            reserve["held"],
        ),
        (
            "faults",
            f"slow upstream ({figures['claim_seconds']} s claim, renewed): "
            f"{renewed['world_calls']} world call for {renewed['askers']} askers, "
            f"{renewed['distinct_bodies']} distinct body served, recorder gets the stored headers",
            renewed["held"],
        ),
        (
            "faults",
            f"control, no renewals: taken over ({control['world_calls']} world calls), "
            f"still {control['distinct_bodies']} distinct body served (first wins)",
            control["held"],
        ),
        (
            "faults",
            "seal while a sibling waits on an expiring claim: "
            f"{figures['seal_during_wait']['waiter_after_seal']}, never forward",
            figures["seal_during_wait"]["held"],
        ),
    ]


def _security_rows(security: dict[str, Any]) -> list[Row]:
    return [
        (
            "security",
            "resolver refuses 0.0.0.0 without tokens",
            security["open_bind_refused"]["held"],
        ),
        ("security", "secrets redacted before storage (store + WAL)", security["secrets"]["held"]),
        ("security", "CA private key never served or logged", security["ca"]["held"]),
        ("security", "tokens required and separated by role", security["tokens"]["held"]),
        ("security", "tokens compared in constant time", security["constant_time"]["held"]),
    ]


def promises(results: dict[str, Any]) -> list[Row]:
    """(area, promise, held) for every check that ran; None when it was skipped."""
    rows: list[Row] = []
    if results.get("load"):
        rows += _load_rows(results["load"])
    if results.get("crash"):
        rows += _crash_rows(results["crash"])
    for case in (results.get("world_faults") or {}).get("cases", []):
        promise = (
            f"world {case['case']}: recorded once, siblings share the bytes"
            if case["case"].startswith("5xx")
            else f"transport {case['case']}: upstream-failed, not recorded, next ask retries"
        )
        rows.append(("faults", promise, case["held"]))
    if results.get("claim_takeover"):
        promise = "dead single-flight holder: a sibling takes over after the claim lapses"
        rows.append(("faults", promise, results["claim_takeover"]["held"]))
    for case in (results.get("big_download") or {}).get("cases", []):
        promise = (
            f"{case['received_mib']:g} MiB download ({case['framing']}): proxy RSS grew "
            f"{case['rss_growth_mib']:g} MiB (< {results['big_download']['limit_mib']} MiB)"
        )
        rows.append(("memory", promise, case["held"]))
    if results.get("store_faults"):
        rows += _store_rows(results["store_faults"])
    if results.get("fail_closed"):
        rows += _fail_closed_rows(results["fail_closed"])
    hostile = results.get("hostile")
    if hostile:
        for case in hostile["cases"]:
            rows.append(("hostile", f"{case['case']} → {case['expect']}", case["held"]))
        promise = "no file written outside the data directory"
        rows.append(("hostile", promise, not hostile["files_written_outside"]))
    for case in (results.get("hostile_fields") or {}).get("cases", []):
        promise = f"{case['case']} → {case['status']} problem+json naming the field"
        rows.append(("hostile", promise, case["held"]))
    fuzz = results.get("schema_fuzz")
    if fuzz:
        promise = f"schema fuzz of {fuzz['operations']} operations: no 5xx"
        rows.append(("hostile", promise, fuzz["held"]))
    keys = results.get("key_properties")
    if keys:
        promise = "request key: never crashes, ignores header/query/JSON-key order"
        rows.append(("hostile", promise, keys["held"]))
    if results.get("security"):
        rows += _security_rows(results["security"])
    for case in (results.get("tunnels") or {}).get("cases", []):
        promise = (
            f"raw CONNECT tunnel, {case['case']}: {case['expect']} "
            f"({case['bytes_reached_world']} bytes reached the world)"
        )
        rows.append(("tunnels", promise, case["held"]))
    for name, error in (results.get("errors") or {}).items():
        rows.append(("error", f"scenario {name} could not run: {error}", False))
    return rows


def headline(results: dict[str, Any]) -> dict[str, Any]:
    load = results.get("load") or {}
    rows = promises(results)
    faults = [held for area, _p, held in rows if area == "faults"]
    audits = [(results.get("crash") or {}).get("store", {})]
    for phase in ("full_disk", "read_only"):
        audits.append(((results.get("store_faults") or {}).get(phase) or {}).get("store_after", {}))
    lost = sum(audit.get("records_lost", 0) for audit in audits)
    audited = sum(audit.get("acknowledged_records", 0) for audit in audits)
    bad_inputs = (
        len((results.get("hostile") or {}).get("cases", []))
        + len((results.get("hostile_fields") or {}).get("cases", []))
        + (results.get("schema_fuzz") or {}).get("calls", 0)
        + sum((results.get("key_properties") or {}).get("examples", {}).values())
    )
    return {
        "load_held": bool(load) and load.get("errors") == 0 and load.get("silent_live_calls") == 0,
        "load_requests": load.get("requests"),
        "load_errors": load.get("errors"),
        "p50_ms": load.get("p50_ms"),
        "p99_ms": load.get("p99_ms"),
        "throughput_rps": load.get("throughput_rps"),
        "throughput_vs_direct": load.get("throughput_vs_direct"),
        "faults_survived": sum(1 for held in faults if held),
        "faults_tried": len(faults),
        "bad_inputs_tried": bad_inputs,
        "records_lost": lost,
        "acknowledged_records_audited": audited,
        "promises_held": sum(1 for *_x, held in rows if held),
        "promises_failed": sum(1 for *_x, held in rows if held is False),
        "promises_skipped": sum(1 for *_x, held in rows if held is None),
    }


def _mark(held: bool | None) -> str:
    return {True: "held", False: "**FAILED**", None: "skipped"}[held]


def render_markdown(results: dict[str, Any]) -> str:
    top = headline(results)
    load = results.get("load") or {}
    lines = [
        "# Groundhog reliability report",
        "",
        f"- Load held: **{'yes' if top['load_held'] else 'no'}** — {top['load_requests']} requests "
        f"by {load.get('workers')} workers over {load.get('branches')} branches, "
        f"{top['load_errors']} errors; p50 {top['p50_ms']} ms, p99 {top['p99_ms']} ms, "
        f"{top['throughput_rps']} req/s ({top['throughput_vs_direct']}x the same workers "
        "calling the upstream directly, measured in the same run)",
        f"- Faults survived: **{top['faults_survived']} of {top['faults_tried']}**",
        f"- Bad inputs tried: **{top['bad_inputs_tried']}**",
        f"- Records lost: **{top['records_lost']}** of {top['acknowledged_records_audited']} "
        "acknowledged records audited after crashes and a full disk (must be 0)",
        f"- Promises: {top['promises_held']} held, {top['promises_failed']} failed, "
        f"{top['promises_skipped']} skipped",
        "",
    ]
    if load.get("memory"):
        lines += [
            "## Memory under load (RSS)",
            "",
            "| process | first third | last third | peak | growth | flat |",
            "|---|---|---|---|---|---|",
        ]
        for series in load["memory"]:
            lines.append(
                f"| {series['name']} | {series.get('first_third_mib')} MiB | "
                f"{series.get('last_third_mib')} MiB | {series.get('peak_mib')} MiB | "
                f"{series.get('growth_ratio')}x | {series.get('flat')} |"
            )
        lines.append("")
    rows = sorted(promises(results), key=lambda row: (row[2] is not False, row[0]))
    lines += ["## Promises", "", "| area | promise | result |", "|---|---|---|"]
    lines += [f"| {area} | {promise} | {_mark(held)} |" for area, promise, held in rows]
    lines += ["", "Every figure is in reliability.json beside this file.", ""]
    return "\n".join(lines)


def write_report(results: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    document = {"headline": headline(results), **results}
    json_path = out_dir / "reliability.json"
    json_path.write_text(json.dumps(document, indent=2, sort_keys=True, default=str) + "\n")
    markdown_path = out_dir / "reliability.md"
    markdown_path.write_text(render_markdown(results))
    return markdown_path, json_path
