from django import forms

from .results import MODES, PAGE_SIZE, SORTS
from .selectors import technique_choices


class SearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=20_000, strip=True, label="Search",
                        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "__shfl_xor_sync, warp-shuffle softmax, tiled matmul with shared memory, or paste a kernel"}))
    mode = forms.ChoiceField(required=False, label="Search", choices=list(MODES.items()))
    level = forms.TypedChoiceField(required=False, coerce=int, empty_value=None, label="Level",
                                   choices=[("", "any level"), (1, "level 1"), (2, "level 2"), (3, "level 3")])
    correct = forms.BooleanField(required=False, label="correct only")
    technique = forms.ChoiceField(required=False, label="Technique")
    sort = forms.ChoiceField(required=False, label="Sort by", choices=list(SORTS.items()))
    page = forms.IntegerField(required=False, min_value=1, max_value=1_000_000)
    # Results per page (the API's `limit`, kept from before pages existed).
    limit = forms.IntegerField(required=False, min_value=1, max_value=100)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["technique"].choices = [("", "any technique"), *technique_choices()]

    def search_arguments(self) -> dict:
        data = self.cleaned_data
        return {"query": data["q"], "mode": data["mode"] or "auto", "level": data["level"],
                "correct_only": data["correct"], "technique": data["technique"] or None,
                "sort": data["sort"] or "relevance", "page": data["page"] or 1, "page_size": data["limit"] or PAGE_SIZE}


class MapForm(forms.Form):
    highlight = forms.IntegerField(required=False, min_value=1)
    q = forms.CharField(required=False, max_length=20_000, strip=True)
