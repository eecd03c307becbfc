"""challenge-hooks for CTFd: the challenge type "instanced", whose modal
embeds the gateway's player page, whose flags the gateway checks, and an admin
page of the instances. Installed as CTFd/plugins/challenge_hooks
(README.md)."""

import datetime
import re

from flask import Blueprint, abort, redirect, render_template, request, url_for
from werkzeug.exceptions import BadRequest

from CTFd.models import Challenges, Teams, Users, db
from CTFd.plugins import (
    register_admin_plugin_menu_bar,
    register_plugin_assets_directory,
)
from CTFd.plugins.challenges import CHALLENGE_CLASSES, BaseChallenge, ChallengeResponse
from CTFd.utils.config import is_teams_mode
from CTFd.utils.decorators import admins_only, authed_only
from CTFd.utils.user import get_current_team, get_current_user, is_admin

from . import gateway

TYPE = "instanced"
ASSETS = "/plugins/challenge_hooks/assets/"
# A ChallengeDefinition's name (docs/api.md): a DNS label.
DEFINITION = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


class InstancedChallenge(Challenges):
    __mapper_args__ = {"polymorphic_identity": TYPE}
    id = db.Column(
        db.Integer, db.ForeignKey("challenges.id", ondelete="CASCADE"), primary_key=True
    )
    # The ChallengeDefinition's name, in the gateway platform's namespace.
    definition = db.Column(db.String(63), nullable=False)
    stop_on_correct = db.Column(db.Boolean, default=False)


class SharedFlag(db.Model):
    """A submission of another owner's flag: who sent it, whose it was."""

    __tablename__ = "challenge_hooks_shared_flags"
    id = db.Column(db.Integer, primary_key=True)
    date = db.Column(db.DateTime, default=datetime.datetime.utcnow)
    challenge_id = db.Column(
        db.Integer, db.ForeignKey("challenges.id", ondelete="CASCADE")
    )
    submitter = db.Column(db.String(80))
    owner = db.Column(db.String(80))
    reason = db.Column(db.Text)


def _flag_value(value):
    return str(value).lower() in ("1", "true", "on", "yes")


def _checked(data):
    """The definition's name, or 400 (CTFd answers its own exceptions with 500)."""
    definition = str(data.get("definition", "")).strip()
    if not DEFINITION.match(definition):
        raise BadRequest(
            "definition must be a ChallengeDefinition's name (lowercase letters, "
            "digits and '-', at most 63)"
        )
    return definition


def current_owner():
    """The gateway owner the current session acts for, and its CTFd name."""
    if is_teams_mode():
        team = get_current_team()
        if team is None:
            abort(403)
        return gateway.owner_of("Team", team.id), team.name
    user = get_current_user()
    return gateway.owner_of("User", user.id), user.name


def account_name(owner):
    """`Team:7` -> the team's name (or the owner itself when unknown)."""
    kind, _, account_id = owner.partition(":")
    model = Teams if kind == "Team" else Users
    account = (
        model.query.filter_by(id=int(account_id)).first()
        if account_id.isdigit()
        else None
    )
    return f"{account.name} ({owner})" if account is not None else owner


class InstancedChallengeType(BaseChallenge):
    id = TYPE
    name = TYPE
    templates = {
        "create": ASSETS + "create.html",
        "update": ASSETS + "update.html",
        "view": ASSETS + "view.html",
    }
    scripts = {
        "create": ASSETS + "create.js",
        "update": ASSETS + "update.js",
        "view": ASSETS + "view.js",
    }
    route = ASSETS
    blueprint = Blueprint(
        "challenge_hooks_type",
        __name__,
        template_folder="templates",
        static_folder="assets",
    )
    challenge_model = InstancedChallenge

    @classmethod
    def create(cls, request):
        data = dict(request.form or request.get_json())
        data["definition"] = _checked(data)
        data["stop_on_correct"] = _flag_value(data.get("stop_on_correct", False))
        challenge = InstancedChallenge(**data)
        db.session.add(challenge)
        db.session.commit()
        return challenge

    @classmethod
    def read(cls, challenge):
        data = super().read(challenge)
        data.update(
            {
                "definition": challenge.definition,
                "stop_on_correct": bool(challenge.stop_on_correct),
            }
        )
        return data

    @classmethod
    def update(cls, challenge, request):
        data = dict(request.form or request.get_json())
        if "definition" in data:
            data["definition"] = _checked(data)
        if "stop_on_correct" in data:
            data["stop_on_correct"] = _flag_value(data["stop_on_correct"])
        for attr, value in data.items():
            setattr(challenge, attr, value)
        db.session.commit()
        return challenge

    @classmethod
    def delete(cls, challenge):
        SharedFlag.query.filter_by(challenge_id=challenge.id).delete()
        super().delete(challenge)

    @classmethod
    def attempt(cls, challenge, request):
        data = request.form or request.get_json()
        submission = str(data.get("submission", "")).strip()
        owner, name = current_owner()
        try:
            result = gateway.verify(
                challenge.definition, submission, owner, challenge.stop_on_correct
            )
        except gateway.GatewayError:
            return ChallengeResponse(
                status="incorrect",
                message="The flag cannot be checked right now; try again in a minute.",
            )
        if result.get("result") == "correct":
            return ChallengeResponse(status="correct", message="Correct")
        if result.get("result") == "anotherOwner":
            other = result.get("owner") or {}
            other_owner = f"{other.get('kind')}:{other.get('id')}"
            db.session.add(
                SharedFlag(
                    challenge_id=challenge.id,
                    submitter=owner,
                    owner=other_owner,
                    reason=(
                        f"{name} ({owner}) submitted the flag of "
                        f"{account_name(other_owner)} for {challenge.name}"
                    ),
                )
            )
            db.session.commit()
        if result.get("result") == "unverifiable":
            return ChallengeResponse(
                status="incorrect", message=result.get("message", "Incorrect")
            )
        return ChallengeResponse(status="incorrect", message="Incorrect")


admin = Blueprint("challenge_hooks", __name__)


@admin.route("/plugins/challenge_hooks/play/<int:challenge_id>")
@authed_only
def play(challenge_id):
    """The modal's iframe: a redirect to the player page with a fresh token
    in the fragment (never sent to a server, so in no log)."""
    challenge = InstancedChallenge.query.filter_by(id=challenge_id).first_or_404()
    if challenge.state != "visible":
        abort(404)
    owner, _ = current_owner()
    token = gateway.player_token(owner)
    response = redirect(
        f"{gateway.public_url()}/play/{challenge.definition}#token={token}"
    )
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


def _accounts():
    if is_teams_mode():
        return [("Team", t.id, t.name) for t in Teams.query.order_by(Teams.id)]
    return [("User", u.id, u.name) for u in Users.query.order_by(Users.id)]


@admin.route("/admin/challenge_hooks")
@admins_only
def instances_page():
    challenges = {c.definition: c for c in InstancedChallenge.query.all()}
    rows, problems = [], []
    for kind, account_id, name in _accounts():
        owner = gateway.owner_of(kind, account_id)
        try:
            held = gateway.instances(owner)
        except gateway.GatewayError as error:
            problems.append(f"{name} ({owner}): {error}")
            continue
        for instance in held:
            challenge = challenges.get(instance.get("definition"))
            if challenge is None:
                continue
            rows.append(
                {
                    "team": f"{name} ({owner})",
                    "owner": owner,
                    "challenge": challenge.name,
                    "challenge_id": challenge.id,
                    "phase": instance.get("phase"),
                    "reason": instance.get("reason"),
                    "endpoint": instance.get("command") or "",
                    "expires": instance.get("expiresAt") or "",
                }
            )
    rows.sort(key=lambda row: (row["team"], row["challenge"]))
    reports = SharedFlag.query.order_by(SharedFlag.id.desc()).all()
    return render_template(
        "plugins/challenge_hooks/templates/challenge_hooks_admin.html",
        rows=rows,
        problems=problems,
        reports=reports,
        message=request.args.get("message", ""),
    )


@admin.route("/admin/challenge_hooks/<action>", methods=["POST"])
@admins_only
def instance_action(action):
    if action not in ("stop", "restart"):
        abort(404)
    challenge_id = request.form.get("challenge_id", "")
    if not challenge_id.isdigit():
        abort(400)
    challenge = InstancedChallenge.query.filter_by(id=int(challenge_id)).first_or_404()
    owner = request.form.get("owner", "")
    if not re.match(r"^(Team|User):[0-9]+$", owner):
        abort(400)
    try:
        status, message = gateway.action(challenge.definition, action, owner)
        text = f"{action} of {challenge.name} for {owner}: " + (
            "requested" if status == 202 else f"refused ({status}): {message}"
        )
    except gateway.GatewayError as error:
        text = f"{action} of {challenge.name} for {owner}: {error}"
    return redirect(url_for("challenge_hooks.instances_page", message=text))


def definition_choices():
    """For the admin form: the definitions the gateway lists, or a sentence
    saying why there are none (the form then takes the name as typed)."""
    if not is_admin():
        return {"names": [], "problem": ""}
    try:
        return {"names": gateway.definitions(), "problem": ""}
    except gateway.GatewayError as error:
        return {"names": [], "problem": str(error)}


def load(app):
    app.jinja_env.globals["challenge_hooks_definitions"] = definition_choices
    app.db.create_all()
    CHALLENGE_CLASSES[TYPE] = InstancedChallengeType
    register_plugin_assets_directory(app, base_path=ASSETS)
    app.register_blueprint(admin)
    register_admin_plugin_menu_bar("Instances", "/admin/challenge_hooks")
