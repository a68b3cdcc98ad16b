from django import forms

from .selectors import technique_choices


class SearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=20_000, strip=True, label="Search",
                        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "warp-shuffle softmax, tiled matmul with shared memory, or paste a kernel"}))
    level = forms.TypedChoiceField(required=False, coerce=int, empty_value=None, label="Level",
                                   choices=[("", "any level"), (1, "level 1"), (2, "level 2"), (3, "level 3")])
    correct = forms.BooleanField(required=False, label="correct only")
    technique = forms.ChoiceField(required=False, label="Technique")
    limit = forms.IntegerField(required=False, min_value=1, max_value=100)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["technique"].choices = [("", "any technique"), *technique_choices()]

    def search_arguments(self) -> dict:
        data = self.cleaned_data
        return {"query": data["q"], "level": data["level"], "correct_only": data["correct"],
                "technique": data["technique"] or None, "limit": data["limit"] or 20}


class MapForm(forms.Form):
    highlight = forms.IntegerField(required=False, min_value=1)
    q = forms.CharField(required=False, max_length=20_000, strip=True)
