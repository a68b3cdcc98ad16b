"""The submission form: a task, a kind, and the code pasted or as a file (one of the two).
It checks only the form's shape; what the code must be is the service's to say."""
from django import forms

from kernels.models import Kernel

from .selectors import submission_tasks


class TaskChoice(forms.ModelChoiceField):
    def label_from_instance(self, task):
        return f"L{task.level} T{task.task_number} {task.op_name}"


class SubmissionForm(forms.Form):
    task = TaskChoice(queryset=submission_tasks(), empty_label="choose a task",
                      error_messages={"invalid_choice": "choose one of the archive's tasks"})
    kind = forms.ChoiceField(choices=Kernel.Kind.choices, initial=Kernel.Kind.MODEL_NEW)
    code = forms.CharField(required=False, strip=False,
                           widget=forms.Textarea(attrs={"rows": 18, "spellcheck": "false"}),
                           help_text="paste the kernel's source, or choose its file below")
    file = forms.FileField(required=False, help_text="a .py (model_new) or .cpp/.cu (cuda_forward) source file")

    def clean_code(self):
        # Browsers send a textarea's lines ending in CRLF whatever was pasted: the source as typed
        # has LF, and so the same code pasted or sent through the API is the same kernel.
        return self.cleaned_data["code"].replace("\r\n", "\n")

    def clean(self):
        data = super().clean()
        pasted, upload = data.get("code") or "", data.get("file")
        if pasted.strip() and upload:
            raise forms.ValidationError("give the code once: paste it or choose a file, not both")
        if not pasted.strip() and not upload:
            raise forms.ValidationError("no code: paste the kernel's source or choose its file")
        return data
