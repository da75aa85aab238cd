from django import forms
from django.utils.text import slugify

# Slugs that would shadow a fixed URL such as /pools/new/.
RESERVED_SLUGS = frozenset({"new"})


class TablerFormMixin:
    """Gives every widget Tabler's classes, and ``is-invalid`` to fields with errors,
    so templates render ``{{ field }}`` and keep Django's own widget logic."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            widget = field.widget
            if isinstance(widget, forms.CheckboxInput):
                css_class = "form-check-input"
            elif isinstance(widget, forms.Select):
                css_class = "form-select"
            else:
                css_class = "form-control"
            widget.attrs["class"] = f"{widget.attrs.get('class', '')} {css_class}".strip()

    def full_clean(self):
        super().full_clean()
        for name in self.errors:
            if name in self.fields:
                widget = self.fields[name].widget
                widget.attrs["class"] = f"{widget.attrs.get('class', '')} is-invalid".strip()
                widget.attrs["aria-invalid"] = "true"


class SlugFromNameMixin:
    """Fills an empty slug from the name and refuses slugs that shadow fixed URLs."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "slug" in self.fields:
            self.fields["slug"].required = False
            self.fields["slug"].help_text = "Leave empty to derive it from the name."

    def clean_slug(self):
        slug = self.cleaned_data.get("slug") or slugify(self.data.get("name", ""))
        if not slug:
            raise forms.ValidationError("Enter a slug or a name it can be made from.")
        if slug in RESERVED_SLUGS:
            raise forms.ValidationError(f"“{slug}” is reserved for a page address; choose another.")
        return slug
