"""The navigation graph: actions agents fire, sessions that settle them honestly."""

from assay.graph.declaration import ActionSpec as ActionSpec
from assay.graph.declaration import Reversibility as Reversibility
from assay.graph.graph import NavigationGraph as NavigationGraph
from assay.graph.graph import build_navigation_graph as build_navigation_graph
from assay.graph.journey import Journey as Journey
from assay.graph.journey import JourneyProgress as JourneyProgress
from assay.graph.result import Answer as Answer
from assay.graph.result import FireResult as FireResult
from assay.graph.session import Session as Session
