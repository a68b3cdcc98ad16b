"""The submissions API, under /api/submissions/ (token or session auth): POST a kernel for a
task, GET your submissions and one of them (what the page's status poll reads). Someone else's
submission is a 404; nothing here edits or deletes one."""
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.pagination import PageNumberPagination
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from kernels.models import Kernel
from web.api_errors import ApiError
from web.renderers import EscapedJSONRenderer

from . import selectors, services


class SubmissionInSerializer(serializers.Serializer):
    level = serializers.IntegerField(min_value=1, help_text="the task's level, as in /tasks/<level>/<task>/")
    task_number = serializers.IntegerField(min_value=1, help_text="the task's number within its level")
    kind = serializers.ChoiceField(choices=Kernel.Kind.choices)
    code = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False,
                                 help_text="the kernel's source; or send it as `file` (multipart)")
    file = serializers.FileField(required=False, help_text="the kernel's source file, UTF-8")

    def validate(self, data):
        if bool((data.get("code") or "").strip()) == bool(data.get("file")):
            raise serializers.ValidationError("send the kernel's source once: `code` or `file`, one of the two")
        return data


def submission_body(submission, request, *, with_code: bool = False) -> dict:
    state = selectors.submission_state(submission)
    run, kernel, task = state["run"], submission.kernel, submission.task
    body = {
        "id": submission.id,
        "page_url": request.build_absolute_uri(reverse("submission_detail", args=[submission.id])),
        "task": {"level": task.level, "task_number": task.task_number, "op_name": task.op_name},
        "kind": kernel.kind, "kernel_id": kernel.id, "kernel_name": kernel.name,
        "kernel_url": (request.build_absolute_uri(reverse("kernel_detail", args=[kernel.id]))
                       if state["kernel_public"] else None),
        "status": state["status"], "finished": state["finished"], "created_at": submission.created_at,
        "verification": None if run is None else {
            "id": run.id, "status": run.status, "gpu_name": run.gpu_name, "device": run.device,
            "runtime_ms": run.runtime_ms, "speedup_eager": run.speedup_eager, "speedup_compile": run.speedup_compile,
            "finished_at": run.finished_at, "flags": run.flags or [],
        },
    }
    if with_code:
        body["screening_flags"] = kernel.screening_flags or []
        body["code"] = kernel.code
    return body


class Pagination(PageNumberPagination):
    page_size = 50


class SubmissionList(APIView):
    """Your submissions, newest first (GET); submit a kernel for a task (POST): 201 with the new
    submission, 200 with the one you made before when the code is the same."""
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser, MultiPartParser, FormParser]
    renderer_classes = [EscapedJSONRenderer]

    @extend_schema(operation_id="submissions_list",
                   responses={200: OpenApiResponse(description="your submissions, paginated")})
    def get(self, request):
        paginator = Pagination()
        page = paginator.paginate_queryset(selectors.submissions_of(request.user), request, view=self)
        return paginator.get_paginated_response([submission_body(s, request) for s in page])

    @extend_schema(operation_id="submissions_create",
                   request={"application/json": SubmissionInSerializer, "multipart/form-data": SubmissionInSerializer},
                   responses={201: OpenApiResponse(description="submitted: queued for the worker"),
                              200: OpenApiResponse(description="the same code was submitted before: that submission"),
                              400: OpenApiResponse(description="what is wrong, field by field; nothing was stored"),
                              413: OpenApiResponse(description="over ARCHIVE_SUBMISSION_MAX_KB"),
                              429: OpenApiResponse(description="a per-user limit: per day or open at once")})
    def post(self, request):
        form = SubmissionInSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        task = selectors.task_numbered(data["level"], data["task_number"])
        if task is None:
            raise ApiError(f"task: the archive has no task level {data['level']} number {data['task_number']}",
                           code="unknown_task", errors=[{"field": "task_number", "message": "no such task"}])
        try:
            code = services.submission_code_from_upload(data["file"]) if data.get("file") else data["code"]
            submission, created = services.submission_create(user=request.user, task=task, kind=data["kind"],
                                                             code=code)
        except services.SubmissionRefused as refused:
            raise ApiError(str(refused), code=refused.code, status_code=refused.status,
                           errors=[{"field": field, "message": message} for field, message in refused.problems])
        return Response(submission_body(submission, request, with_code=True),
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class SubmissionDetail(APIView):
    """One of your submissions: its status, and once finished its verdict with every flag."""
    permission_classes = [permissions.IsAuthenticated]
    renderer_classes = [EscapedJSONRenderer]

    @extend_schema(operation_id="submissions_retrieve", responses={200: OpenApiResponse(description="the submission"),
                              404: OpenApiResponse(description="no submission of yours has this id")})
    def get(self, request, submission_id: int):
        return Response(submission_body(selectors.submission_of(request.user, submission_id), request, with_code=True))
