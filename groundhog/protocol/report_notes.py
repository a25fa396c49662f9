"""What the report's numbers mean and what they cannot show, in words, said once.

`lies 0` reads as "nothing stale was served", but `lies` counts only what the resolver itself
knew was stale (replay mode). A world with global state, or a dependency model that misses a
resource, can serve a wrong answer the oracle-free report never sees. The API report, the CLI and
the viewer print these same sentences beside the numbers, so nobody takes one for the other.
"""

from __future__ import annotations

LIES = (
    "lies count reads served `stale`: replay mode served them knowingly, from the tape, although "
    "this branch's own writes had invalidated them."
)
CANNOT_SEE = (
    "What this report cannot see: a read Groundhog shared although the world changed in a way it "
    "was not told — a world with one global state (a sibling's write visible to every branch), a "
    "dependency model that misses a resource, a world that answers by time. Only the world's own "
    "oracle (bench/) grades that. Where a sibling's live write could have leaked, the reads are "
    "flagged `possibly contaminated`."
)
CONTAMINATED = (
    "possibly contaminated: a read served a recording made after a live write to the same origin "
    "(scheme, host, port) by a branch outside the reader's lineage; if the world keeps global "
    "state, that write may be in the bytes every sibling shared."
)

NOTES = {"lies": LIES, "cannot_see": CANNOT_SEE, "possibly_contaminated": CONTAMINATED}
