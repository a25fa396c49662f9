"""The mitmproxy addon that puts every worker request through the resolver.

This is Groundhog's network boundary: without it nothing is recorded, shared or refused.
For each request it works out the tape and branch, strips the worker's private headers, asks
the resolver, and then either serves the tape's bytes without opening any upstream connection,
or fetches live and records the answer (upstream failures included) so siblings share it.
Bodies over the size limit, streams and WebSockets go through mitmproxy natively, unrecorded,
marked `passthrough` and reported to the resolver so they are counted.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from mitmproxy import connection, ctx, http
from mitmproxy.addonmanager import Loader

from proxy import faults, problems
from proxy.egress import upstream_proxy_url
from proxy.identity import (
    HEADER_BRANCH,
    HEADER_TAPE,
    Credentials,
    CredentialsError,
    credentials_from_request,
    identify,
)
from proxy.options import declare_options
from proxy.passthrough import PASSTHROUGH, fetched_passthrough_kind, native_passthrough_kind
from proxy.resolver_client import (
    ResolverClient,
    ResolverProtocolError,
    ResolverRejected,
    ResolverUnavailable,
)
from proxy.tunnels import Tunnels
from proxy.upstream import UpstreamClient, UpstreamFailure
from proxy.wire import (
    add_upstream_headers,
    mark_response,
    relayed_response,
    resolve_payload,
    response_from_payload,
    response_payload,
    strip_private_headers,
)

log = logging.getLogger(__name__)

META = "groundhog"
RECORD_ERROR_HEADER = "X-Groundhog-Record-Error"


@dataclass
class FlowState:
    """What the addon decided for one flow (kept in `flow.metadata[META]`)."""

    mode: str = "answered"  # answered | served | fetched | native
    decision: str = ""
    occurrence: int | None = None
    fingerprint: str = ""
    ticket: str | None = None
    passthrough: str | None = None  # the passthrough kind, for native flows
    reported: bool = False

    def mark(self, response: http.Response, decision: str | None = None) -> None:
        mark_response(
            response,
            decision=decision or self.decision,
            occurrence=self.occurrence,
            fingerprint=self.fingerprint,
        )


class Groundhog:
    def __init__(self) -> None:
        self.resolver: ResolverClient | None = None
        self.upstream: UpstreamClient | None = None
        self._tunnel_credentials: dict[str, Credentials] = {}
        self._retired: list[ResolverClient | UpstreamClient] = []

    def load(self, loader: Loader) -> None:
        declare_options(loader)

    def configure(self, updated: set[str]) -> None:
        options = ctx.options
        if self.resolver is None or updated & {
            "groundhog_resolver_url",
            "groundhog_proxy_token",
            "groundhog_resolve_timeout",
            "groundhog_record_timeout",
            "groundhog_wait_timeout",
            "groundhog_wait_limit",
        }:
            self._retire(self.resolver)
            self.resolver = ResolverClient(
                options.groundhog_resolver_url,
                token=options.groundhog_proxy_token,
                resolve_timeout=options.groundhog_resolve_timeout,
                record_timeout=options.groundhog_record_timeout,
                wait_timeout=options.groundhog_wait_timeout,
                wait_limit=options.groundhog_wait_limit,
            )
        if (
            self.upstream is None
            or any(
                name.startswith("groundhog_upstream") or name.startswith("ssl_") for name in updated
            )
            or updated & {"groundhog_max_body_bytes", "mode", "upstream_auth"}
        ):
            self._retire(self.upstream)
            self.upstream = UpstreamClient(
                verify_tls=not options.ssl_insecure,
                ca_file=options.ssl_verify_upstream_trusted_ca,
                connect_timeout=options.groundhog_upstream_connect_timeout,
                read_timeout=options.groundhog_upstream_read_timeout,
                max_body_bytes=options.groundhog_max_body_bytes,
                # upstream_auth is declared by EgressAuth, absent where only this addon is loaded
                proxy=upstream_proxy_url(options.mode, getattr(options, "upstream_auth", None)),
            )

    def _retire(self, client: ResolverClient | UpstreamClient | None) -> None:
        if client is not None:
            self._retired.append(client)

    async def done(self) -> None:
        for client in [*self._retired, self.resolver, self.upstream]:
            if client is not None:
                await client.close()
        self._retired.clear()

    # -- identity carried by CONNECT ------------------------------------------------------

    def http_connect(self, flow: http.HTTPFlow) -> None:
        try:
            credentials = credentials_from_request(flow.request)
        except CredentialsError as error:
            flow.response = problems.bad_credentials(str(error))
            return
        # Some clients put headers on the CONNECT itself (requests' proxy_headers); they win.
        header_tape = flow.request.headers.get(HEADER_TAPE)
        header_branch = flow.request.headers.get(HEADER_BRANCH)
        if credentials is not None or header_tape or header_branch:
            self._tunnel_credentials[flow.client_conn.id] = Credentials(
                tape=header_tape or (credentials.tape if credentials else None),
                branch=header_branch or (credentials.branch if credentials else None),
            )

    def client_disconnected(self, client: connection.Client) -> None:
        self._tunnel_credentials.pop(client.id, None)

    # -- the request path -----------------------------------------------------------------

    async def requestheaders(self, flow: http.HTTPFlow) -> None:
        declared = flow.request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self._max_body_bytes():
            # Decide before the body arrives: a streamed body goes upstream as it comes.
            await self._handle(flow, body_too_large=True)

    async def request(self, flow: http.HTTPFlow) -> None:
        if META in flow.metadata:
            return
        too_large = len(flow.request.raw_content or b"") > self._max_body_bytes()
        await self._handle(flow, body_too_large=too_large)

    async def _handle(self, flow: http.HTTPFlow, *, body_too_large: bool) -> None:
        state = FlowState()
        flow.metadata[META] = state
        options = ctx.options
        try:
            identity, missing = identify(
                flow.request,
                remembered=self._tunnel_credentials.get(flow.client_conn.id),
                default_tape=options.groundhog_tape,
                default_branch=options.groundhog_branch,
            )
        except CredentialsError as error:
            flow.response = problems.bad_credentials(str(error))
            return
        finally:
            strip_private_headers(flow.request)
        if identity is None:
            flow.response = problems.missing_identity(missing or "tape")
            return

        assert self.resolver is not None
        payload = resolve_payload(
            flow.request, tape=identity.tape, branch=identity.branch, body_too_large=body_too_large
        )
        answer = await self._ask(flow, self.resolver.resolve, payload)
        if answer is None:
            return
        await faults.hold(answer)  # injected latency or timeout (proxy/faults.py)
        try:
            action = answer["action"]
            state.decision = str(answer["decision"])
            state.occurrence = answer.get("occurrence")
            state.fingerprint = answer.get("fingerprint") or ""
            state.ticket = answer.get("ticket")
            if action == "serve":
                self._serve(flow, state, answer["response"])
                faults.enact(flow)  # an injected reset closes the connection
                return
            if action != "forward":
                raise KeyError(f"action {action!r}")
        except (KeyError, TypeError, ValueError) as error:
            flow.response = problems.resolver_protocol_error(
                self.resolver.base_url, f"/v1/resolve answer lacks a usable {error}"
            )
            return

        add_upstream_headers(flow.request, answer.get("upstream_headers") or [])
        kind = native_passthrough_kind(flow.request, body_too_large)
        if kind is not None or state.ticket is None:
            state.mode, state.passthrough = "native", kind
            if body_too_large and not flow.request.raw_content:
                flow.request.stream = True
            return
        await self._fetch_and_record(flow, state)

    def _serve(self, flow: http.HTTPFlow, state: FlowState, recorded: dict) -> None:
        response = response_from_payload(recorded)
        state.mark(response)
        state.mode = "served"
        flow.response = response

    async def _ask(self, flow: http.HTTPFlow, call, payload: dict) -> dict | None:
        """Call the resolver; on failure answer the worker and return None."""
        assert self.resolver is not None
        try:
            return await call(payload)
        except ResolverUnavailable as error:
            log.warning("resolver unavailable: %s", error)
            flow.response = problems.resolver_unavailable(self.resolver.base_url, str(error))
        except ResolverRejected as rejected:
            flow.response = relayed_response(rejected.status, rejected.headers, rejected.body)
        except ResolverProtocolError as error:
            flow.response = problems.resolver_protocol_error(self.resolver.base_url, str(error))
        return None

    async def _fetch_and_record(self, flow: http.HTTPFlow, state: FlowState) -> None:
        assert self.upstream is not None and self.resolver is not None
        state.mode = "fetched"
        ticket = state.ticket
        try:
            fetched = await self.upstream.fetch(flow.request)
        except UpstreamFailure as failure:
            log.info("upstream %s failed: %s", flow.request.pretty_url, failure)
            error = {"kind": failure.kind, "message": failure.message}
            ack = await self._ask(flow, self.resolver.record, {"ticket": ticket, "error": error})
            if ack is None:
                return
            if not isinstance(ack.get("response"), dict):
                flow.response = problems.resolver_protocol_error(
                    self.resolver.base_url, "/v1/record answered an error record with no response"
                )
                return
            state.decision = ack.get("decision") or state.decision
            self._serve(flow, state, ack["response"])
            return

        kind = fetched_passthrough_kind(fetched)
        if kind is not None:
            record = {"ticket": ticket, "passthrough": kind}
            state.decision = PASSTHROUGH
        else:
            record = {
                "ticket": ticket,
                "response": response_payload(fetched.status, fetched.fields, fetched.body),
            }
        record_error = None
        try:
            ack = await self.resolver.record(record)
            if kind is None:
                state.decision = ack.get("decision") or state.decision
        except (ResolverUnavailable, ResolverRejected, ResolverProtocolError) as error:
            # The live call already happened; withholding its answer would hide a write from
            # the branch that made it. The worker gets it, told that the tape does not have it.
            log.error("could not record %s: %s", flow.request.pretty_url, error)
            record_error = str(error)
        flow.response = fetched.to_response()
        state.mark(flow.response)
        if record_error is not None:
            flow.response.headers[RECORD_ERROR_HEADER] = record_error[:300]

    # -- natively forwarded passthrough ---------------------------------------------------

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        state = flow.metadata.get(META)
        if state is None or state.mode != "native" or flow.response is None:
            return
        # Passthrough is never recorded, so stream it: SSE and large downloads flow as they come.
        flow.response.stream = True
        state.mark(flow.response, PASSTHROUGH if state.passthrough else None)

    async def response(self, flow: http.HTTPFlow) -> None:
        await self._report_passthrough(flow)

    async def error(self, flow: http.HTTPFlow) -> None:
        await self._report_passthrough(flow)

    async def _report_passthrough(self, flow: http.HTTPFlow) -> None:
        state = flow.metadata.get(META)
        if state is None or state.mode != "native" or state.reported:
            return
        ticket, kind = state.ticket, state.passthrough
        if ticket is None or kind is None:
            return
        state.reported = True
        assert self.resolver is not None
        try:
            await self.resolver.record({"ticket": ticket, "passthrough": kind})
        except (ResolverUnavailable, ResolverRejected, ResolverProtocolError) as error:
            log.error("could not report passthrough of %s: %s", flow.request.pretty_url, error)

    def _max_body_bytes(self) -> int:
        return ctx.options.groundhog_max_body_bytes


addons = [Groundhog(), Tunnels()]
