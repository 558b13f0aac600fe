"""Operations as pipelines: each of `add`, `index`, `sync` and `survey` is declared once as an ordered list of
stages (`stage.Stage`), run by one runner (`runner.run`) through an executor (`executors`), the only thing
`--task-runner` chooses. docs/architecture.md, "The pipeline and its executors".
"""
