"""SimToolReal-v0's tool catalog: the seeded procedural tools (`tools`: `ToolCatalog`, `Tool`,
`DISTRIBUTIONS`, the source's 600- and 1,200-tool pools) and their geometry as MjSpec geoms or
meshes (`geometry`)."""

from mjvec.tasks.simtoolreal.catalog.tools import (
    DISTRIBUTIONS,
    OBJECT_BASE_SIZE,
    TOOL_GEOMETRIES,
    TOPOLOGY_CLASSES,
    Tool,
    ToolCatalog,
    ToolDistribution,
)

__all__ = ["DISTRIBUTIONS", "OBJECT_BASE_SIZE", "TOOL_GEOMETRIES", "TOPOLOGY_CLASSES", "Tool", "ToolCatalog",
           "ToolDistribution"]
