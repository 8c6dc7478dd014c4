"""Exception types shared by every layer."""


class LayoutError(ValueError):
    """A layout request that cannot be satisfied: unknown mesh axis, bad spec, bad width...

    Subclasses ValueError so that generic Array API code catching ValueError still works.
    """
