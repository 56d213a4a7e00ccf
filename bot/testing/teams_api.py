"""Organization teams in the test server: who is an active member (GitHub's membership API).

gh.teams[("acme", "gpu-maintainers")] = {"alice"}
"""

from __future__ import annotations

from bot.testing.host import RouteHost
from bot.testing.rest_core import ApiRequest, ApiResponse, not_found


def register_team_routes(api: RouteHost) -> dict[tuple[str, str], set[str]]:
    teams: dict[tuple[str, str], set[str]] = {}

    def membership(req: ApiRequest) -> ApiResponse:
        members = teams.get((req.params["org"], req.params["team"]))
        login = req.params["user"]
        if members is None or login not in members:
            raise not_found()
        base = f"{api.gh.url}/orgs/{req.params['org']}/teams/{req.params['team']}"
        return api.ok({"url": f"{base}/memberships/{login}", "role": "member", "state": "active"})

    api.router.add(
        "GET", r"/orgs/(?P<org>[^/]+)/teams/(?P<team>[^/]+)/memberships/(?P<user>[^/]+)", membership
    )
    return teams
