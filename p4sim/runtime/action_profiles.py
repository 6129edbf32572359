"""Action profiles and action selectors: members, groups, and BMv2's member selection.

Contract 2 of docs/architecture.md. A table with ``implementation = action_profile(...)``
holds member ids in its entries; one with an ``action_selector`` may hold a group id instead.
``select(group_id, hash_value)`` picks a member the way BMv2's ``action_profile.cpp`` does:
the group's members in ascending member order, index ``hash_value % member_count``.
"""

from __future__ import annotations

from p4sim.errors import UserError
from p4sim.runtime.tables import ActionCall


class ActionProfileError(UserError):
    """A control-plane operation on an action profile that cannot be applied."""


class ActionProfile:
    """Members (member_id -> ActionCall) and, for selectors, groups (group_id -> member ids)."""

    def __init__(self, name: str, size: int = 1024, actions: list[str] | None = None,
                 with_selector: bool = False, algorithm: str | None = None,
                 max_group_size: int = 0) -> None:
        self.name = name
        self.size = size
        self.actions = list(actions or [])
        self.with_selector = with_selector
        self.algorithm = algorithm
        self.max_group_size = max_group_size
        self.members: dict[int, ActionCall] = {}
        self.groups: dict[int, list[int]] = {}

    # -- members ------------------------------------------------------------------------------

    def add_member(self, member_id: int, action: ActionCall) -> None:
        if member_id in self.members:
            raise ActionProfileError(f"action profile {self.name}: member {member_id} already exists")
        if len(self.members) >= self.size:
            raise ActionProfileError(f"action profile {self.name}: full ({self.size} members)")
        self._check_action(action)
        self.members[member_id] = action

    def modify_member(self, member_id: int, action: ActionCall) -> None:
        self._member(member_id)
        self._check_action(action)
        self.members[member_id] = action

    def delete_member(self, member_id: int) -> None:
        self._member(member_id)
        for gid, mbrs in self.groups.items():
            if member_id in mbrs:
                raise ActionProfileError(f"action profile {self.name}: member {member_id} is still "
                                         f"in group {gid}")
        del self.members[member_id]

    # -- groups -------------------------------------------------------------------------------

    def add_group(self, group_id: int, member_ids: list[int] | tuple[int, ...] = ()) -> None:
        if not self.with_selector:
            raise ActionProfileError(f"action profile {self.name}: has no selector, so no groups")
        if group_id in self.groups:
            raise ActionProfileError(f"action profile {self.name}: group {group_id} already exists")
        self.groups[group_id] = []
        self.set_group_members(group_id, member_ids)

    def set_group_members(self, group_id: int, member_ids: list[int] | tuple[int, ...]) -> None:
        self._group(group_id)
        ids = sorted(set(member_ids))
        for m in ids:
            self._member(m)
        if self.max_group_size and len(ids) > self.max_group_size:
            raise ActionProfileError(f"action profile {self.name}: group {group_id} would have "
                                     f"{len(ids)} members, max is {self.max_group_size}")
        self.groups[group_id] = ids

    def add_member_to_group(self, group_id: int, member_id: int) -> None:
        self.set_group_members(group_id, [*self._group(group_id), member_id])

    def remove_member_from_group(self, group_id: int, member_id: int) -> None:
        mbrs = self._group(group_id)
        if member_id not in mbrs:
            raise ActionProfileError(f"action profile {self.name}: member {member_id} is not in "
                                     f"group {group_id}")
        self.groups[group_id] = [m for m in mbrs if m != member_id]

    def delete_group(self, group_id: int) -> None:
        self._group(group_id)
        del self.groups[group_id]

    # -- data plane ---------------------------------------------------------------------------

    def member_action(self, member_id: int) -> ActionCall | None:
        return self.members.get(member_id)

    def select(self, group_id: int, hash_value: int) -> ActionCall | None:
        """The action of member ``sorted(members)[hash % n]``; None for an empty/unknown group."""
        mbrs = self.groups.get(group_id)
        if not mbrs:
            return None
        return self.members.get(mbrs[hash_value % len(mbrs)])

    def select_member(self, group_id: int, hash_value: int) -> int | None:
        mbrs = self.groups.get(group_id)
        if not mbrs:
            return None
        return mbrs[hash_value % len(mbrs)]

    # -- helpers ------------------------------------------------------------------------------

    def _member(self, member_id: int) -> ActionCall:
        try:
            return self.members[member_id]
        except KeyError:
            raise ActionProfileError(f"action profile {self.name}: no member {member_id}") from None

    def _group(self, group_id: int) -> list[int]:
        try:
            return self.groups[group_id]
        except KeyError:
            raise ActionProfileError(f"action profile {self.name}: no group {group_id}") from None

    def _check_action(self, action: ActionCall) -> None:
        if self.actions and action.name not in self.actions:
            raise ActionProfileError(f"action profile {self.name}: action {action.name} is not one of "
                                     f"{', '.join(self.actions)}")

    def reset(self) -> None:
        self.members.clear()
        self.groups.clear()
