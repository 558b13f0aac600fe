"""papervault: papers and their code, parsed once into a durable, searchable research vault."""

__version__ = "0.1.0"
