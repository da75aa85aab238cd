"""One palette for purposes everywhere (charts, badges), so training is always the
same blue and inference the same orange on every page."""

PURPOSE_COLOURS = {
    "training": "#206bc4",
    "inference": "#f76707",
    "mixed": "#ae3ec9",
}
PURPOSE_BADGE_CLASSES = {
    "training": "bg-blue-lt",
    "inference": "bg-orange-lt",
    "mixed": "bg-purple-lt",
}
