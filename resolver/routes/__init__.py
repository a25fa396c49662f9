"""One APIRouter per area of the resolver's HTTP surface."""
