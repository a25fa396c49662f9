"""Redaction of the text formats credentials travel in besides JSON and forms: INI, `.env`,
properties and YAML lines, XML elements and attributes, YAML documents, and name/value pairs.

Agents send configuration as it is written on disk (`DB_PASSWORD=…` in a `.env`, an INI
`aws_secret_access_key = …`, a YAML `password:`), SOAP and other XML with `<password>` elements
and `password="…"` attributes, and SDK and form-builder payloads that name a field in one member
and hold its value in another (`{"name": "password", "value": "…"}`). A name rule that only
reads JSON keys and form names misses every one of them. Each is handled here with the same
name families and keyed placeholders as the rest of redaction (engine/redaction_rules.py), so
siblings that send the same secret still share an address.

XML is parsed with defusedxml (no DTDs, entities or external references: hostile input never
reaches bare expat) and YAML with `yaml.safe_load` (documents with anchors, whose aliases could
multiply a small document, are read line by line instead). A body that does not parse falls back
to the line rules and the format scan, so nothing is stored unexamined. The line rule is one
linear scan (`(?m)^` anchored, bounded repeats), so a 64 KiB text body costs one pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from xml.etree.ElementTree import Element, ParseError, tostring

import defusedxml
import yaml
from defusedxml.ElementTree import fromstring as parse_xml

from engine.redaction_rules import Placeholders

if TYPE_CHECKING:
    from engine.redaction import Policy

# `NAME = value`, `NAME: value`, `export NAME=value`, `- name: value`, one per line. The value
# runs to the end of the line; surrounding quotes and trailing spaces stay readable.
_ASSIGNMENT = re.compile(
    r"[ \t]{0,64}+(?:export[ \t]++|-[ \t]++)?"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,127}+)[\"']?[ \t]{0,16}+[=:][ \t]{0,16}+"
    r"(?P<value>[^\r\n]{1,8192}+)"
)
# A name/value pair: which member names the field, which holds its value.
PAIR_NAMES = ("name", "key", "field", "parameter", "parameterkey", "variable", "header", "label")
PAIR_VALUES = ("value", "parametervalue")
# Every credential family's words and suffixes hold one of these (engine/redaction_rules.py).
# A case-insensitive alternation defeats the regex engine's literal search (tens of ms over
# 64 KiB): ASCII text is lowered and searched case-sensitively, other text opens with a class.
_CREDENTIALISH_LOWER = re.compile(r"pass|pw|secret|token|key|auth|cookie|cred|sig|sess")
_CREDENTIALISH = re.compile(r"[pstkacPSTKAC](?i:ass|w|ecret|oken|ey|uth|ookie|red|ig|ess)")
_YAML_ANCHOR = re.compile(r"(?:^|[\s\[{,:-])&[^\s]")


def _unquoted(value: str) -> tuple[int, str]:
    """(offset, the value without surrounding quotes, a trailing `,`/`;` and spaces)."""
    inner = value.rstrip(" \t,;")
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "\"'":
        return 1, inner[1:-1]
    return 0, inner


def _candidate_lines(text: str, policy: Policy) -> Iterator[int]:
    """Where each line that may assign a credential starts: lines holding a word of a
    credential family (one fast pass), or every line when the tape names fields of its own."""
    if policy.params:
        yield 0
        yield from (index + 1 for index, char in enumerate(text) if char == "\n")
        return
    seen = -1
    ascii_text = text.isascii()  # lowering keeps every offset only then
    searched = text.lower() if ascii_text else text
    words = _CREDENTIALISH_LOWER if ascii_text else _CREDENTIALISH
    for hit in words.finditer(searched):
        start = text.rfind("\n", 0, hit.start()) + 1
        if start != seen:
            seen = start
            yield start


def redact_lines(text: str, policy: Policy, marks: Placeholders) -> str:
    """`text` with the value of every credential-named assignment line replaced."""
    if "=" not in text and ":" not in text:
        return text
    parts: list[str] = []
    last = 0
    for line_start in _candidate_lines(text, policy):
        match = _ASSIGNMENT.match(text, line_start)
        if match is None or match.start() < last:
            continue
        rule = policy.name_rule(match.group("name"), policy.params, "param")
        if rule is None:
            continue
        offset, inner = _unquoted(match.group("value"))
        if not inner or inner in ("|", ">", "|-", ">-"):
            continue  # an empty value or a YAML block: its own lines are read
        start = match.start("value") + offset
        parts.append(text[last:start])
        parts.append(marks.replace(inner, "body", rule))
        last = start + len(inner)
    if not parts:
        return text
    parts.append(text[last:])
    return "".join(parts)


# `<password>…</password>` in markup the XML parser refused (a fragment, HTML, a broken document).
_ELEMENT = re.compile(
    r"<(?P<tag>[A-Za-z_][A-Za-z0-9_:.\-]{0,127}+)(?:[ \t\r\n][^<>]{0,4096}+)?>"
    r"(?P<value>[^<]{1,8192}+)</(?P=tag)>"
)


def redact_elements(text: str, policy: Policy, marks: Placeholders) -> str:
    """`text` with the content of every credential-named element replaced (no parser)."""
    if "</" not in text:
        return text
    parts: list[str] = []
    last = 0
    for match in _ELEMENT.finditer(text):
        rule = policy.name_rule(_local(match.group("tag")), policy.params, "param")
        value = match.group("value").strip()
        if rule is None or not value:
            continue
        start = match.start("value") + match.group("value").index(value)
        parts += [text[last:start], marks.replace(value, "xml", rule)]
        last = start + len(value)
    if not parts:
        return text
    parts.append(text[last:])
    return "".join(parts)


def pair_rule(document: dict[Any, Any], policy: Policy) -> tuple[str, str] | None:
    """(the member holding the value, the rule) when `document` is a name/value pair whose
    name is a credential, else None."""
    if len(document) > 8:
        return None
    lowered = {name.lower(): name for name in document if isinstance(name, str)}
    value_member = next((lowered[v] for v in PAIR_VALUES if v in lowered), None)
    if value_member is None:
        return None
    for label in PAIR_NAMES:
        named = document.get(lowered.get(label, ""))
        if isinstance(named, str) and named:
            rule = policy.name_rule(named, policy.params, "param")
            if rule is not None:
                return value_member, rule
    return None


def _local(name: str) -> str:
    return name.rsplit("}", 1)[-1].rsplit(":", 1)[-1]


def _replace_inside(element: Element, rule: str, marks: Placeholders) -> None:
    for inner in element.iter():
        if inner.text and inner.text.strip():
            inner.text = marks.replace(inner.text.strip(), "xml", rule)
        for name, value in inner.attrib.items():
            if value:
                inner.attrib[name] = marks.replace(value, "xml", rule)


def _redact_element(element: Element, policy: Policy, marks: Placeholders) -> None:
    for name, value in element.attrib.items():
        rule = policy.name_rule(_local(name), policy.params, "param")
        if rule is not None and value:
            element.attrib[name] = marks.replace(value, "xml", rule)
        else:
            element.attrib[name] = policy.scan(value, "xml", marks)
    rule = policy.name_rule(_local(element.tag), policy.params, "param")
    if rule is not None:
        _replace_inside(element, rule, marks)
    else:
        if element.text:
            element.text = policy.scan(element.text, "xml", marks)
        for child in element:
            _redact_element(child, policy, marks)
    if element.tail:
        element.tail = policy.scan(element.tail, "xml", marks)


def redact_xml(text: str, policy: Policy, marks: Placeholders) -> str | None:
    """The XML document with credential elements and attributes replaced, the rest scanned by
    format; None when it does not parse (or declares a DTD or entities)."""
    try:
        root = parse_xml(text, forbid_dtd=True)
    except (ParseError, defusedxml.DefusedXmlException, ValueError):
        return None
    if not isinstance(root, Element):
        return None
    before = len(marks.findings)
    try:
        _redact_element(root, policy, marks)
    except RecursionError:
        return None
    if len(marks.findings) == before:
        return text
    return tostring(root, encoding="unicode")


def load_yaml(text: str) -> Any:
    """The YAML document as data, or None when it does not parse into a mapping or a list (or
    holds anchors, whose aliases would be walked once per reference)."""
    if _YAML_ANCHOR.search(text):
        return None
    try:
        document = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError, ValueError):
        return None
    return document if isinstance(document, dict | list) else None


def dump_yaml(document: Any) -> str:
    return str(yaml.safe_dump(document, sort_keys=False, allow_unicode=True))
