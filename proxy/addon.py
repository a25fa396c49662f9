"""The mitmproxy addon that puts every worker request through the resolver.

This is Groundhog's network boundary: without it nothing is recorded, shared or refused.
For each request it works out the tape and branch, strips the worker's private headers, asks
the resolver, and then either serves the tape's bytes without opening any upstream connection,
or lets mitmproxy forward the request natively and records the world's answer as it comes back
(`proxy.live`; failures before any answer become `upstream-failed`, served through
`proxy.native`). WebSockets and request bodies over the size limit go through unrecorded,
marked `passthrough` and reported to the resolver so they are counted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import partial

from mitmproxy import connection, ctx, http
from mitmproxy.addonmanager import Loader
from mitmproxy.proxy import layer, server_hooks

from groundhog.protocol.decisions import Action, Decision
from groundhog.protocol.wire import RecordAnswer, ResolveAnswer, ResolveAsk, WireResponse
from groundhog.protocol.wire_codec import resolve_payload
from proxy import faults, native, problems
from proxy.attempts import Attempts
from proxy.capabilities import pin_refusal
from proxy.capture import Capture, named_other_identity
from proxy.fail_closed import fail_closed_hooks
from proxy.h2c import PriorKnowledgeH2
from proxy.header_deadline import HeaderDeadline
from proxy.held_branches import LeaseBook, configured_leases
from proxy.host_map import Target, mapped
from proxy.identity import Credentials, CredentialsError, Identity, connect_credentials, identify
from proxy.live import META, RESOLVER_ERRORS, FlowState, LiveRecorder, failure_kind
from proxy.options import arm_failpoints, check_options, declare_options, host_map, seconds
from proxy.passthrough import Kind, native_passthrough_kind
from proxy.resolver_client import (
    ResolverClient,
    ResolverProtocolError,
    ResolverRejected,
    ResolverUnavailable,
)
from proxy.sandbox_answers import make_own
from proxy.self_guard import SelfGuard
from proxy.served_coding import serve_in_accepted_coding
from proxy.tunnels import Tunnels
from proxy.websocket_played import PLAYING
from proxy.websocket_tape import (
    RECORDING,
    ConversationRecorder,
    WebSocketTape,
    served_upgrade,
)
from proxy.wire import (
    add_upstream_headers,
    relayed_response,
    response_from_payload,
    strip_private_headers,
)

log = logging.getLogger(__name__)


@fail_closed_hooks
class GroundhogAddon:
    def __init__(self) -> None:
        self.resolver: ResolverClient | None = None
        self.attempts = Attempts()
        self.live = LiveRecorder(self._resolver, self.attempts, self._recorded)
        self.capture = Capture()
        # mitmproxy calls nested addons' hooks.
        self.addons = [WebSocketTape(self._resolver), self.capture]
        self._tunnel_credentials: dict[str, Credentials] = {}
        self._connect_timers: dict[str, asyncio.TimerHandle] = {}
        # A server connection `--map-host` dialled elsewhere, by id: the address it stands for.
        self._mapped_from: dict[str, tuple[str, int]] = {}
        self._retired: list[ResolverClient] = []
        self.guard = SelfGuard()
        self.host_map: dict[str, Target] = {}
        self.leases: LeaseBook | None = None
        self._running = False
        self._recovery: asyncio.Future[None] | None = None

    def _resolver(self) -> ResolverClient:
        assert self.resolver is not None
        return self.resolver

    def load(self, loader: Loader) -> None:
        declare_options(loader)

    def configure(self, updated: set[str]) -> None:
        options = ctx.options
        check_options(options, updated)
        if self.resolver is None or updated & {
            "groundhog_resolver_url",
            "groundhog_proxy_token",
            "groundhog_resolve_timeout",
            "groundhog_record_timeout",
            "groundhog_wait_timeout",
            "groundhog_wait_limit",
            "groundhog_resolve_retry",
        }:
            if self.resolver is not None:
                self._retired.append(self.resolver)
            self.resolver = ResolverClient(
                options.groundhog_resolver_url,
                token=options.groundhog_proxy_token,
                resolve_timeout=seconds(options, "groundhog_resolve_timeout"),
                record_timeout=seconds(options, "groundhog_record_timeout"),
                wait_timeout=seconds(options, "groundhog_wait_timeout"),
                wait_limit=seconds(options, "groundhog_wait_limit"),
                resolve_retry=seconds(options, "groundhog_resolve_retry"),
            )
        if updated & {"groundhog_resolver_url", "groundhog_admin_addresses", "listen_port"}:
            self._build_guard(self._option_listen())
        if "groundhog_map_host" in updated:
            self.host_map = host_map(options)
        if "groundhog_failpoints" in updated:
            arm_failpoints(options.groundhog_failpoints)
        if updated & {
            "groundhog_branch_leases",
            "groundhog_lease_dir",
            "groundhog_lease_ship_seconds",
            "groundhog_lease_disk_bytes",
        }:
            self._configure_leases()

    def _configure_leases(self) -> None:
        before = self.leases
        self.leases = configured_leases(before, ctx.options, self._resolver)
        if self._running and self.leases is not None and self.leases is not before:
            self._recovery = asyncio.ensure_future(self.leases.recover())  # turned on live

    async def running(self) -> None:
        # The addresses the proxy really listens at (an ephemeral port is known only now).
        server = ctx.master.addons.get("proxyserver")
        bound = [(str(a[0]), int(a[1])) for a in server.listen_addrs()] if server else []
        self._build_guard([*self._option_listen(), *bound])
        self._running = True
        if self.leases is not None:
            await self.leases.recover()  # hits served before a restart, shipped first

    def _option_listen(self) -> list[tuple[str, int]]:
        port = ctx.options.listen_port
        return [(ctx.options.listen_host or "0.0.0.0", port)] if port else []

    def _build_guard(self, listen: list[tuple[str, int]]) -> None:
        self.guard = SelfGuard.build(
            resolver_url=ctx.options.groundhog_resolver_url,
            listen=listen,
            admin_addresses=ctx.options.groundhog_admin_addresses,
        )

    async def _refused_target(self, flow: http.HTTPFlow) -> bool:
        """Answer a request for Groundhog's own endpoints with a problem; True if it was one.
        A host `--map-host` sends elsewhere is judged where it really goes as well."""
        host, port = flow.request.host, flow.request.port
        host = self.capture.stand_ins.name_for(host) or host  # what will really be dialled
        reason = await self.guard.refusal(host, port)
        target = mapped(self.host_map, host, port)
        if reason is None and target != (host, port):
            reason = await self.guard.refusal(*target)
            if reason is not None:
                reason = f"--map-host sends {host} to {target[0]}:{target[1]}: {reason}"
                host, port = target
        if reason is None:
            return False
        log.warning("refused a request for %s:%s: it is Groundhog's own endpoint", host, port)
        flow.response = problems.forbidden_target(f"{host}:{port}", reason)
        return True

    async def done(self) -> None:
        if self.leases is not None:
            await self.leases.close()
        for client in [*self._retired, self.resolver]:
            if client is not None:
                await client.close()
        self._retired.clear()

    # -- mitmproxy's own connection handling, adapted ------------------------------------

    def next_layer(self, data: layer.NextLayer) -> None:
        native.adapt(data.layer)

    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        self.capture.name_behind_stand_in(data)
        address = data.server.address
        if self.host_map and address is not None:
            # After mitmproxy chose the server name (SNI) and the Host header: only where the
            # connection opens changes (proxy/host_map.py).
            target = mapped(self.host_map, *address)
            if target != address:
                self._mapped_from[data.server.id] = address
                data.server.address = target
        # mitmproxy opens upstream connections with no timeout of its own; this hook runs in
        # the task that connects, so cancelling that task ends the attempt (a connect failure).
        task = asyncio.current_task()
        if task is not None:
            timeout = seconds(ctx.options, "groundhog_upstream_connect_timeout")
            timer = asyncio.get_running_loop().call_later(timeout, task.cancel)
            self._connect_timers[data.server.id] = timer

    def server_connected(self, data: server_hooks.ServerConnectionHookData) -> None:
        timer = self._connect_timers.pop(data.server.id, None)
        if timer is not None:
            timer.cancel()
        original = self._mapped_from.pop(data.server.id, None)
        if original is not None:
            # mitmproxy reuses a server connection only for requests whose host:port equals its
            # address: once dialled, a mapped connection goes back to the name it stands for, or
            # each request of a kept-alive client opens (and keeps) one more connection. Its
            # peername still says where it really went. mitmproxy refuses to set the address of
            # an open connection, hence the dictionary.
            data.server.__dict__["address"] = original

    server_connect_error = server_connected

    # -- identity carried by CONNECT ------------------------------------------------------

    async def http_connect(self, flow: http.HTTPFlow) -> None:
        if await self._refused_target(flow):
            return
        try:
            credentials = connect_credentials(flow.request)
        except CredentialsError as error:
            flow.response = problems.bad_credentials(str(error))
            return
        if credentials is not None:
            self._tunnel_credentials[flow.client_conn.id] = credentials

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
        if await self._refused_target(flow):
            strip_private_headers(flow.request)
            return
        options = ctx.options
        worker = self.capture.worker_of(flow.client_conn)
        if worker is not None:
            # A captured worker's identity is its namespace: it cannot name another.
            mismatch = named_other_identity(flow.request, worker)
            strip_private_headers(flow.request)
            if mismatch is not None:
                flow.response = problems.captured_identity(mismatch.named, worker)
                return
            identity = Identity(
                tape=worker.tape, branch=worker.branch, capability=worker.capability
            )
        else:
            try:
                named, missing = identify(
                    flow.request,
                    remembered=self._tunnel_credentials.get(flow.client_conn.id),
                    default_tape=options.groundhog_tape,
                    default_branch=options.groundhog_branch,
                    default_capability=options.groundhog_capability,
                )
            except CredentialsError as error:
                flow.response = problems.bad_credentials(str(error))
                return
            finally:
                strip_private_headers(flow.request)
            if named is None:
                flow.response = problems.missing_identity(missing or "tape")
                return
            identity = named
        pinned = pin_refusal(
            identity.tape,
            identity.branch,
            pinned_tape=options.groundhog_tape,
            pinned_branch=options.groundhog_branch,
        )
        if pinned is not None:
            flow.response = pinned
            return

        resolver = self._resolver()
        payload = resolve_payload(
            flow.request, tape=identity.tape, branch=identity.branch, body_too_large=body_too_large
        )
        if identity.capability:
            payload["capability"] = identity.capability  # checked by the resolver
        payload["attempt"] = self.attempts.attempt_for(payload)
        state.ask = payload
        answer = await self._answer(flow, payload)
        if answer is None:
            # No answer reached the worker: its retry of this request asks as this attempt.
            self.attempts.unanswered(payload)
            return
        await faults.hold(answer)  # injected latency or timeout (proxy/faults.py)
        try:
            action = answer["action"]
            state.decision = str(answer["decision"])
            state.occurrence = answer.get("occurrence")
            state.fingerprint = answer.get("fingerprint") or ""
            state.request_key = answer.get("request_key") or ""
            state.ticket = answer.get("ticket")
            state.claim_seconds = answer.get("claim_seconds")
            state.is_write = state.decision == Decision.WRITE
            state.tape, state.branch = identity.tape, identity.branch
            if action == Action.SERVE:
                self._serve(flow, state, answer["response"])
                faults.enact(flow)  # an injected reset closes the connection
                return
            if action != Action.FORWARD:
                raise KeyError(f"action {action!r}")
        except (KeyError, TypeError, ValueError) as error:
            flow.response = problems.resolver_protocol_error(
                resolver.base_url, f"/v1/resolve answer lacks a usable {error}"
            )
            return

        add_upstream_headers(flow.request, answer.get("upstream_headers") or [])
        kind = native_passthrough_kind(flow.request, body_too_large)
        if kind is Kind.WEBSOCKET and state.ticket is not None:
            # Recorded as a conversation when it ends (proxy/websocket_tape.py).
            flow.metadata[RECORDING] = ConversationRecorder(state.ticket, self._max_body_bytes())
            state.mode = "native"
            return
        if kind is not None or state.ticket is None:
            state.mode, state.passthrough = "native", kind
            if body_too_large and not flow.request.raw_content:
                flow.request.stream = True
            return
        # mitmproxy forwards the request itself once this hook returns.
        self.live.begin(flow, state)

    async def _answer(self, flow: http.HTTPFlow, payload: ResolveAsk) -> ResolveAnswer | None:
        """The branch's lease holder's own answer to a hit, else the resolver's."""
        ask = partial(self._ask, flow, self._resolver().resolve)
        if self.leases is None:
            return await ask(payload)
        try:
            return await self.leases.answer(payload, ask)
        except ResolverUnavailable as error:
            # The branch's locally served hits could not reach the resolver before this ask:
            # answered as an unreachable resolver is (fail closed), nothing asked or forwarded.
            log.warning("resolver unavailable: %s", error)
            flow.response = problems.resolver_unavailable(self._resolver().base_url, str(error))
            return None

    def _recorded(self, state: FlowState, answer: RecordAnswer, sent_body: bytes) -> None:
        if self.leases is not None:
            self.leases.learn_recorded(state, answer, sent_body)

    def _serve(self, flow: http.HTTPFlow, state: FlowState, recorded: WireResponse | None) -> None:
        if recorded is None:
            raise TypeError("serve answer without a response")
        response = response_from_payload(recorded)
        player = served_upgrade(flow.request, response)
        if player is not None:
            flow.metadata[PLAYING] = player
        replayed_write = state.decision == Decision.REPLAYED_WRITE
        make_own(
            flow.request,
            response,
            state.tape,
            state.branch,
            occurrence=state.occurrence,
            replayed_write=replayed_write,
        )
        serve_in_accepted_coding(flow.request, response)
        state.mark(response)
        state.mode = "served"
        flow.response = response

    async def _ask(
        self,
        flow: http.HTTPFlow,
        call: Callable[[ResolveAsk], Awaitable[ResolveAnswer]],
        payload: ResolveAsk,
    ) -> ResolveAnswer | None:
        """Call the resolver; on failure answer the worker and return None."""
        resolver = self._resolver()
        try:
            return await call(payload)
        except ResolverUnavailable as error:
            log.warning("resolver unavailable: %s", error)
            flow.response = problems.resolver_unavailable(resolver.base_url, str(error))
        except ResolverRejected as rejected:
            flow.response = relayed_response(rejected.status, rejected.headers, rejected.body)
        except ResolverProtocolError as error:
            flow.response = problems.resolver_protocol_error(resolver.base_url, str(error))
        return None

    # -- the answer path ------------------------------------------------------------------

    async def responseheaders(self, flow: http.HTTPFlow) -> None:
        state = flow.metadata.get(META)
        if state is None or flow.response is None:
            return
        if state.mode == "live":
            await self.live.responseheaders(flow, state)
        elif state.mode == "native":
            self._upgrade_refused(flow, state)
            # Passthrough is never recorded, so stream it: it flows as it comes.
            flow.response.stream = True
            state.mark(flow.response, Decision.PASSTHROUGH if state.passthrough else None)

    async def response(self, flow: http.HTTPFlow) -> None:
        state = flow.metadata.get(META)
        if state is None:
            return
        if state.mode == "live":
            await self.live.response(flow, state)
        elif state.mode == "native":
            self._upgrade_refused(flow, state)
            await self._report_passthrough(flow, state)

    async def error(self, flow: http.HTTPFlow) -> None:
        state = flow.metadata.get(META)
        if state is None:
            return
        if state.mode == "live":
            await self.live.error(flow, state)
            return
        if state.mode == "native":
            self._upgrade_refused(flow, state)
            await self._report_passthrough(flow, state)
            if flow.response is None and flow.error is not None:
                kind, message = failure_kind(flow, state)
                failure = problems.upstream_failed(flow.request.pretty_url, kind, message)
                flow.metadata[native.FAILURE_RESPONSE] = failure

    @staticmethod
    def _upgrade_refused(flow: http.HTTPFlow, state: FlowState) -> None:
        """A WebSocket upgrade the world did not accept (or a failed one) has no conversation
        to record: it is reported as passthrough, as before."""
        upgraded = flow.response is not None and flow.response.status_code == 101
        failed = flow.error is not None or not upgraded
        if failed and flow.metadata.pop(RECORDING, None) is not None:
            state.passthrough = Kind.WEBSOCKET

    async def _report_passthrough(self, flow: http.HTTPFlow, state: FlowState) -> None:
        if state.reported or state.ticket is None or state.passthrough is None:
            return
        state.reported = True
        try:
            await self._resolver().record(
                {"ticket": state.ticket, "passthrough": state.passthrough}
            )
        except RESOLVER_ERRORS as error:
            log.error("could not report passthrough of %s: %s", flow.request.pretty_url, error)

    def _max_body_bytes(self) -> int:
        return ctx.options.groundhog_max_body_bytes


_groundhog = GroundhogAddon()
addons = [_groundhog, HeaderDeadline(), Tunnels(_groundhog.capture), PriorKnowledgeH2()]
