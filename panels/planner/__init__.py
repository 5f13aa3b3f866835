"""The planner panel (placeholder until issue #6 lands)."""
from panels.placeholder import placeholder_panel

TITLE = 'Planner replay (Diffusion Planner)'

Panel = placeholder_panel(
    'planner',
    TITLE,
    'A diffusion planner with guidance driving in a closed-loop simulator, with a timeline replay of what it did and why.',
    issue=6,
)


def create_panel(ctx):
    return Panel(ctx)
