"""Closed-loop replay: how much of a plan's value survives the actual world."""

from horizon_opt.simulate.engine import replay, simulate
from horizon_opt.simulate.policy import Policy, policy
from horizon_opt.simulate.replay_figures import Replay
from horizon_opt.simulate.world import Noise, World, draw_world

__all__ = ["Noise", "Policy", "Replay", "World", "draw_world", "policy", "replay", "simulate"]
