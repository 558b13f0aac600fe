"""The application layer: the operations a user invokes, once, as plain functions over a workspace.

The command line (`papervault/commands/`), the Prefect flows (`flows/`) and the MCP server (`mcp_server/`) all
call these; none of them holds logic of its own beyond arguments, output and orchestration. Nothing here
imports Prefect, click or the MCP SDK.

- `adding`: `add`, declared as the pipeline ADD (import, then the one index update)
- `indexing`: the one index update, declared as the pipeline INDEX
- `papers`: add_repo, delete, list with filters (one year grammar for every front end)
- `survey`: the work of the survey's stages (retrieve ... polish) and the survey document's assembly;
  `surveyplan`: the survey declared as the pipeline SURVEY, run through an executor (in process by default)
- `sync`: one pass of `papervault sync`, declared as the pipeline SYNC (each source's pass: `syncsources`)
- `context`: `RunContext`, the typed settings object every stage of a run is given (`papervault.pipeline`)
- `demo`: the demo pipeline (init, add, index, survey, site)
- `reading`: a paper's outline, and its text by section, pages, offset or chunk window; its figures
- `search`: the checks, the hits (one dedupe for every front end) and the no-hit messages of a search
- `ids`: which paper an id names (its own id, else a former id that `rekey` left in `aliases`), for every front end
"""
