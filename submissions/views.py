"""Pages of submissions, under /submissions/: the form, the user's list, one submission's page.
Signed-in users only; a submission of someone else is a 404 (selectors.submission_of)."""
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from . import selectors, services
from .forms import SubmissionForm

LIST_LENGTH = 100


@login_required
def submission_list(request):
    rows = [{"submission": s, "status": selectors.submission_status(selectors.latest_run(s))}
            for s in selectors.submissions_of(request.user, limit=LIST_LENGTH)]
    return render(request, "submissions/list.html", {
        "rows": rows, "left_today": services.submissions_left_today(request.user),
    })


@login_required
@require_http_methods(["GET", "POST"])
def submission_new(request):
    form = SubmissionForm(request.POST or None, request.FILES or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            data = form.cleaned_data
            try:
                code = services.submission_code_from_upload(data["file"]) if data["file"] else data["code"]
                submission, _ = services.submission_create(user=request.user, task=data["task"], kind=data["kind"],
                                                           code=code)
            except services.SubmissionRefused as refused:
                status = refused.status
                for field, message in refused.problems:
                    form.add_error(field if field in form.fields else None, message)
            else:
                return redirect("submission_detail", submission_id=submission.id)
    return render(request, "submissions/new.html", {
        "form": form, "left_today": services.submissions_left_today(request.user),
        "max_kb": services.max_code_bytes() // 1024,
    }, status=status)


@login_required
def submission_detail(request, submission_id: int):
    submission = selectors.submission_of(request.user, submission_id)
    return render(request, "submissions/detail.html", selectors.submission_page(submission))
